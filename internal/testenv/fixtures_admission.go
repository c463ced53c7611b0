package testenv

import (
	"context"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// fixtureAPIGroup is the made-up API group that every fixture webhook and
// admission policy matches, so that none of them intercepts a real request.
const fixtureAPIGroup = "fixtures.kube-state-push.invalid"

// FixturesAdmission creates admissionregistration.k8s.io/v1 objects that
// exercise every family of the admission resources: webhook configurations
// with webhooks reached by service, by URL and none at all; validating and
// mutating admission policies with and without a parameter kind; and their
// bindings with and without a parameter reference. The objects are
// cluster-scoped, so their names start with ns. They match only a made-up
// API group, ignore failures and call a service that does not exist.
//
// Mutating admission policies (v1 since Kubernetes 1.36) are created only
// when the API server serves them.
func FixturesAdmission(ctx context.Context, c kubernetes.Interface, ns string) error {
	steps := []func(context.Context, kubernetes.Interface, string) error{
		createFixtureWebhookConfigurations,
		createFixtureValidatingPolicies,
	}
	served, err := servesMutatingAdmissionPolicies(c)
	if err != nil {
		return err
	}
	if served {
		steps = append(steps, createFixtureMutatingPolicies)
	}
	for _, step := range steps {
		if err := step(ctx, c, ns); err != nil {
			return err
		}
	}
	return nil
}

// servesMutatingAdmissionPolicies reports whether discovery lists
// mutatingadmissionpolicies in admissionregistration.k8s.io/v1.
func servesMutatingAdmissionPolicies(c kubernetes.Interface) (bool, error) {
	rs, err := c.Discovery().ServerResourcesForGroupVersion(admissionv1.SchemeGroupVersion.String())
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", admissionv1.SchemeGroupVersion, err)
	}
	return slices.ContainsFunc(rs.APIResources, func(r metav1.APIResource) bool {
		return r.Name == "mutatingadmissionpolicies"
	}), nil
}

// fixtureWebhook holds the parts that mutating and validating webhooks
// share.
type fixtureWebhook struct {
	name   string
	client admissionv1.WebhookClientConfig
}

// fixtureWebhooks returns a webhook that calls a service that does not
// exist and one that calls a URL that does not resolve.
func fixtureWebhooks(ns string) []fixtureWebhook {
	url := "https://webhook." + fixtureAPIGroup + "/admit"
	return []fixtureWebhook{
		{name: "by-service." + fixtureAPIGroup, client: admissionv1.WebhookClientConfig{
			Service: &admissionv1.ServiceReference{Namespace: ns, Name: "missing-webhook"},
		}},
		{name: "by-url." + fixtureAPIGroup, client: admissionv1.WebhookClientConfig{URL: &url}},
	}
}

// fixtureRules match only the made-up API group.
func fixtureRules() []admissionv1.RuleWithOperations {
	return []admissionv1.RuleWithOperations{{
		Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
		Rule: admissionv1.Rule{
			APIGroups: []string{fixtureAPIGroup}, APIVersions: []string{"v1"}, Resources: []string{"widgets"},
		},
	}}
}

func createFixtureWebhookConfigurations(ctx context.Context, c kubernetes.Interface, ns string) error {
	api := c.AdmissionregistrationV1()
	ignore := admissionv1.Ignore
	none := admissionv1.SideEffectClassNone
	versions := []string{"v1"}
	configs := []struct {
		name  string
		hooks []fixtureWebhook
	}{
		{name: ns + "-webhooks", hooks: fixtureWebhooks(ns)},
		{name: ns + "-empty"},
	}
	for _, cfg := range configs {
		v := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: cfg.name}}
		m := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: cfg.name}}
		for _, h := range cfg.hooks {
			v.Webhooks = append(v.Webhooks, admissionv1.ValidatingWebhook{
				Name: h.name, ClientConfig: h.client, Rules: fixtureRules(),
				FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: versions,
			})
			m.Webhooks = append(m.Webhooks, admissionv1.MutatingWebhook{
				Name: h.name, ClientConfig: h.client, Rules: fixtureRules(),
				FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: versions,
			})
		}
		if _, err := api.ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating validating webhook configuration %s: %w", cfg.name, err)
		}
		if _, err := api.MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating mutating webhook configuration %s: %w", cfg.name, err)
		}
	}
	return nil
}

// fixturePolicy holds the variants each kind of admission policy is created
// in, with a binding to each.
type fixturePolicy struct {
	// suffix follows ns in the policy's and its binding's names.
	suffix string
	// paramKind is the policy's parameter kind, nil for none.
	paramKind *admissionv1.ParamKind
	// failure is the policy's failure policy.
	failure admissionv1.FailurePolicyType
	// paramRef is the binding's parameter reference, nil for none.
	paramRef *admissionv1.ParamRef
}

// fixturePolicies returns a policy with a ConfigMap parameter named in its
// binding, and one without a parameter.
func fixturePolicies(ns string) []fixturePolicy {
	deny := admissionv1.DenyAction
	return []fixturePolicy{
		{suffix: "-params", paramKind: &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, failure: admissionv1.Fail,
			paramRef: &admissionv1.ParamRef{Name: "policy-params", Namespace: ns, ParameterNotFoundAction: &deny}},
		{suffix: "-plain", failure: admissionv1.Ignore},
	}
}

// fixtureMatch matches only the made-up API group.
func fixtureMatch() *admissionv1.MatchResources {
	return &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: fixtureRules()[0]}}}
}

func createFixtureValidatingPolicies(ctx context.Context, c kubernetes.Interface, ns string) error {
	api := c.AdmissionregistrationV1()
	actions := [][]admissionv1.ValidationAction{{admissionv1.Deny, admissionv1.Audit}, {admissionv1.Warn}}
	for i, p := range fixturePolicies(ns) {
		name := ns + p.suffix
		policy := &admissionv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionv1.ValidatingAdmissionPolicySpec{
				ParamKind: p.paramKind, FailurePolicy: &p.failure, MatchConstraints: fixtureMatch(),
				Validations: []admissionv1.Validation{{Expression: "true"}},
			},
		}
		if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating validating admission policy %s: %w", name, err)
		}
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: name, ParamRef: p.paramRef, ValidationActions: actions[i],
			},
		}
		if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating validating admission policy binding %s: %w", name, err)
		}
	}
	return nil
}

func createFixtureMutatingPolicies(ctx context.Context, c kubernetes.Interface, ns string) error {
	api := c.AdmissionregistrationV1()
	reinvocation := []admissionv1.ReinvocationPolicyType{admissionv1.IfNeededReinvocationPolicy, admissionv1.NeverReinvocationPolicy}
	for i, p := range fixturePolicies(ns) {
		name := ns + p.suffix
		policy := &admissionv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionv1.MutatingAdmissionPolicySpec{
				ParamKind: p.paramKind, FailurePolicy: &p.failure, MatchConstraints: fixtureMatch(),
				ReinvocationPolicy: reinvocation[i],
				Mutations: []admissionv1.Mutation{{
					PatchType: admissionv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionv1.ApplyConfiguration{
						Expression: `Object{metadata: Object.metadata{labels: {"fixture": "mutated"}}}`,
					},
				}},
			},
		}
		if _, err := api.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating mutating admission policy %s: %w", name, err)
		}
		binding := &admissionv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name, ParamRef: p.paramRef},
		}
		if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating mutating admission policy binding %s: %w", name, err)
		}
	}
	return nil
}
