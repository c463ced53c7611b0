package testenv_test

import (
	"os"
	"testing"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// TestMain stops the control plane the fixture tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.StopShared()
	os.Exit(code)
}
