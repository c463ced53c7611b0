package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// SecretFixtureValue is in the data of every fixture secret, so a test can
// check that it never reaches the agent.
const SecretFixtureValue = "fixture-secret-value-do-not-export"

// FixturesSecrets creates secrets in namespace ns that exercise every secret
// family: the built-in types (Opaque, TLS, docker config JSON and legacy
// docker config, basic auth, SSH auth, service account token) and a custom
// type; labels and annotations whose keys need sanitising; a controller
// owner, owners without a controller flag, and none; one as `kubectl
// apply` leaves it, whose kubectl.kubernetes.io/last-applied-configuration
// annotation holds its stringData in clear. Every secret holds
// SecretFixtureValue in its data. Nothing the families read depends on the
// clock or on chance (the TLS key pair is new each time).
func FixturesSecrets(ctx context.Context, c kubernetes.Interface, ns string) error {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	data := func(keys ...string) map[string][]byte {
		m := make(map[string][]byte, len(keys))
		for _, k := range keys {
			m[k] = []byte(SecretFixtureValue)
		}
		return m
	}
	labelled := meta("secret-opaque")
	labelled.Labels = map[string]string{"app.kubernetes.io/name": "web", "tier": "backend"}
	labelled.Annotations = map[string]string{"owner": "sre", "example.com/rotated-by": "vault"}

	tls := meta("secret-tls")
	tls.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "cert-manager.io/v1", Kind: "Certificate", Name: "web-cert",
		UID: types.UID("00000000-0000-4000-8000-000000000001"), Controller: new(true),
	}}
	custom := meta("secret-custom")
	custom.Labels = map[string]string{"team": "payments"}
	custom.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "settings", UID: types.UID("00000000-0000-4000-8000-000000000002")},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: types.UID("00000000-0000-4000-8000-000000000003"), Controller: new(false)},
	}
	token := meta("secret-sa-token")
	// No token controller runs to fill the token in; the server only
	// requires the annotation.
	token.Annotations = map[string]string{v1.ServiceAccountNameKey: "builder"}

	applied := meta("secret-applied")
	applied.Annotations = map[string]string{v1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"Secret",` +
		`"metadata":{"annotations":{},"name":"secret-applied"},"stringData":{"token":"` + SecretFixtureValue + `"},"type":"Opaque"}` + "\n"}

	cert, key, err := fixtureCertificate()
	if err != nil {
		return err
	}
	dockerConfigJSON := `{"auths":{"registry.example.com":{"auth":"` + SecretFixtureValue + `"}}}`
	secrets := []*v1.Secret{
		{ObjectMeta: labelled, Type: v1.SecretTypeOpaque, Data: data("password", "username")},
		{ObjectMeta: meta("secret-untyped"), Data: data("value")}, // the server defaults the type to Opaque
		{ObjectMeta: tls, Type: v1.SecretTypeTLS, Data: map[string][]byte{
			v1.TLSCertKey: cert, v1.TLSPrivateKeyKey: key, "note": []byte(SecretFixtureValue),
		}},
		{ObjectMeta: meta("secret-dockerconfigjson"), Type: v1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(dockerConfigJSON)}},
		{ObjectMeta: meta("secret-dockercfg"), Type: v1.SecretTypeDockercfg,
			Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"registry.example.com":{"auth":"` + SecretFixtureValue + `"}}`)}},
		{ObjectMeta: meta("secret-basic-auth"), Type: v1.SecretTypeBasicAuth, Data: data(v1.BasicAuthUsernameKey, v1.BasicAuthPasswordKey)},
		{ObjectMeta: meta("secret-ssh-auth"), Type: v1.SecretTypeSSHAuth, Data: data(v1.SSHAuthPrivateKey)},
		{ObjectMeta: token, Type: v1.SecretTypeServiceAccountToken, Data: data("extra")},
		{ObjectMeta: custom, Type: "example.com/custom", Immutable: new(true), StringData: map[string]string{"api-key": SecretFixtureValue}},
		{ObjectMeta: applied, Type: v1.SecretTypeOpaque, StringData: map[string]string{"token": SecretFixtureValue}},
	}
	for _, s := range secrets {
		if _, err := c.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating secret %s/%s: %w", ns, s.Name, err)
		}
	}
	return nil
}

// fixtureCertificate returns a new self-signed certificate and its key, PEM
// encoded: the API server warns about TLS secrets whose certificate does
// not parse. The validity is fixed; only the key is random.
func fixtureCertificate() (cert, key []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating fixture key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "fixtures.kube-state-push.invalid"},
		DNSNames:     []string{"fixtures.kube-state-push.invalid"},
		NotBefore:    time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2126, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return nil, nil, fmt.Errorf("creating fixture certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding fixture key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}
