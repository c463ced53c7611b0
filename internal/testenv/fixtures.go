package testenv

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Fixtures creates a group of fixture objects in namespace ns (which
// exists); cluster-scoped objects are named with ns as a prefix.
type Fixtures func(ctx context.Context, c kubernetes.Interface, ns string) error

// LoadFixtures creates each namespace and loads the fixtures into it.
func LoadFixtures(ctx context.Context, c kubernetes.Interface, f Fixtures, namespaces ...string) error {
	for _, ns := range namespaces {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
		if err := f(ctx, c, ns); err != nil {
			return fmt.Errorf("loading fixtures into %s: %w", ns, err)
		}
	}
	return nil
}
