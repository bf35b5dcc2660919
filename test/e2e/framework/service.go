package framework

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// EnvServiceAudit, when set, makes the service cluster's kube-apiserver
// write an audit log of every write (with the request body for the test
// types of example.com) to service-audit.log in the test's artifacts.
const EnvServiceAudit = "E2E_SERVICE_AUDIT"

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources: [{group: "example.com"}]
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// ServiceCluster is a real kube-apiserver + etcd started for one test.
type ServiceCluster struct {
	Config *rest.Config
	Client ctrlruntimeclient.Client
	// Kubeconfig is the path of an admin kubeconfig for the cluster.
	Kubeconfig string
}

// RepoRoot returns the repository root (two levels above this file's package).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// StartServiceCluster starts kube-apiserver and etcd (both on 127.0.0.1)
// with the PublishedResource CRD from deploy/crd installed, and stops them
// when the test ends.
func StartServiceCluster(t T) *ServiceCluster {
	t.Helper()
	for _, env := range []string{EnvKubeAPIServerBin, EnvEtcdBin} {
		if _, err := RequireEnv(env); err != nil {
			t.Fatal(err)
		}
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "deploy", "crd")},
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme(),
	}
	// Ports from the test range (see FreePort); envtest would pick
	// ephemeral ones. (etcd's peer port stays envtest's choice.)
	etcdPort, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	apiPort, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env.ControlPlane.Etcd = &envtest.Etcd{URL: &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", etcdPort)}}
	api := env.ControlPlane.GetAPIServer()
	api.Address, api.Port = "127.0.0.1", strconv.Itoa(apiPort) // SecureServing
	if os.Getenv(EnvServiceAudit) != "" {
		policy := WriteFile(t, "service-audit-policy.yaml", []byte(auditPolicy))
		api.Configure().Set("audit-policy-file", policy).Set("audit-log-path", filepath.Join(ArtifactsDir(t), "service-audit.log"))
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("failed to start the service cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("failed to stop the service cluster: %v", err)
		}
	})
	c, err := ctrlruntimeclient.New(cfg, ctrlruntimeclient.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	dir := ArtifactsDir(t)
	return &ServiceCluster{Config: cfg, Client: c, Kubeconfig: WriteKubeconfig(t, dir, "service.kubeconfig", cfg)}
}

// CreateNamespace creates a namespace in the service cluster.
func (s *ServiceCluster) CreateNamespace(t T, name string) {
	t.Helper()
	Must(t, s.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}), "create namespace %s", name)
}

// CreateFromFile reads a YAML manifest into obj and creates it. A CRD is
// waited for until it is established.
func (s *ServiceCluster) CreateFromFile(t T, path string, obj ctrlruntimeclient.Object) {
	t.Helper()
	data, err := os.ReadFile(path)
	Must(t, err, "read %s", path)
	Must(t, yaml.Unmarshal(data, obj), "parse %s", path)
	Must(t, s.Client.Create(t.Context(), obj), "create %s", path)
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		s.waitEstablished(t, crd.Name)
	}
}

// WriteFile writes content below the test's artifacts directory.
func WriteFile(t T, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(ArtifactsDir(t), name)
	Must(t, os.WriteFile(p, content, 0o600), "write %s", p)
	return p
}
