// Copyright 2026 The api-syncagent Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package framework

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
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	kcpcorev1alpha1 "github.com/kcp-dev/kcp/sdk/apis/core/v1alpha1"

	"k8s.io/client-go/rest"

	"github.com/kcp-syncagent/api-syncagent/internal/kcp"
)

// EnvKcpFrontProxyBin points to the kcp-front-proxy binary (set by the
// Makefile), needed by StartShardedKcp.
const EnvKcpFrontProxyBin = "KCP_FRONT_PROXY_BIN"

// Shard names of StartShardedKcp.
const (
	RootShard   = "root"
	SecondShard = "shard-1"
)

// Static tokens of the sharded kcp, besides adminToken and agentToken: the
// identities the shards and the front-proxy use among themselves.
const (
	logicalClusterAdminToken         = "e2e-lca-token"
	externalLogicalClusterAdminToken = "e2e-elca-token"
	shardMastersToken                = "e2e-masters-token"
)

// StartShardedKcp starts a kcp of two shards behind a kcp-front-proxy, all
// on 127.0.0.1, and stops it when the test ends: the root shard (with the
// embedded cache server), the shard SecondShard, and the front-proxy that
// routes /clusters/ requests to the shard of the workspace. BaseURL is the
// front-proxy's; workspaces that CreateWorkspace creates are placed on the
// root shard (CreateWorkspaceOnShard chooses). One CA signs every serving
// certificate, so CAData verifies each shard's virtual workspace too.
func StartShardedKcp(t T) *Kcp {
	t.Helper()
	kcpBin, err := RequireEnv(EnvKcpBin)
	if err != nil {
		t.Fatal(err)
	}
	proxyBin, err := RequireEnv(EnvKcpFrontProxyBin)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "api-syncagent-e2e-sharded-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	logDir := ArtifactsDir(t)
	file := func(name string) string { return filepath.Join(dir, name) }

	ports := make([]int, 7) // front-proxy; root API, etcd client, etcd peer; the same for the second shard
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	url := func(port int) string { return fmt.Sprintf("https://127.0.0.1:%d", port) }
	proxyURL, rootURL, shardURL := url(ports[0]), url(ports[1]), url(ports[4])

	ca, err := writeCertificates(dir)
	if err != nil {
		t.Fatal(err)
	}
	tokens := strings.Join([]string{
		adminToken + `,e2e-admin,e2e-admin,"system:kcp:admin"`,
		fmt.Sprintf(`%s,%s,%s,""`, agentToken, AgentUser, AgentUser),
		fmt.Sprintf(`%s,%s,%s,""`, secondAgentToken, SecondAgentUser, SecondAgentUser),
		logicalClusterAdminToken + `,logical-cluster-admin,logical-cluster-admin,"system:kcp:logical-cluster-admin"`,
		externalLogicalClusterAdminToken + `,external-logical-cluster-admin,external-logical-cluster-admin,"system:kcp:external-logical-cluster-admin"`,
		shardMastersToken + `,shard-masters,shard-masters,"system:masters"`,
	}, "\n") + "\n"
	mapping := ""
	for _, path := range []string{"/clusters/", "/services/"} {
		mapping += fmt.Sprintf("- path: %s\n  backend: %s\n  backend_server_ca: %s\n  proxy_client_cert: %s\n  proxy_client_key: %s\n",
			path, rootURL, file("ca.crt"), file("front-proxy-client.crt"), file("front-proxy-client.key"))
	}
	for name, content := range map[string]string{"tokens.csv": tokens, "mapping.yaml": mapping} {
		if err := os.WriteFile(file(name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfigs := []struct{ name, server, context, token string }{
		// The shards replace the host with their own.
		{"logical-cluster-admin.kubeconfig", rootURL, "default", logicalClusterAdminToken},
		// Requests by logical cluster name must reach the workspace's
		// shard: only the front-proxy knows which.
		{"external-logical-cluster-admin.kubeconfig", proxyURL, "default", externalLogicalClusterAdminToken},
		{"cache.kubeconfig", rootURL, "default", shardMastersToken},
		// kcp reads the context named shard-base.
		{"root-shard.kubeconfig", rootURL, "shard-base", shardMastersToken},
		// The front-proxy overrides the server per shard.
		{"shards.kubeconfig", rootURL, "default", shardMastersToken},
	}
	for _, kc := range kubeconfigs {
		if err := writeKubeconfig(file(kc.name), kc.context, &rest.Config{Host: kc.server, BearerToken: kc.token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}); err != nil {
			t.Fatal(err)
		}
	}

	versioned, err := versionedKcpArgs(t.Context(), kcpBin)
	if err != nil {
		t.Fatal(err)
	}
	common := append([]string{
		"--bind-address=127.0.0.1",
		"--shard-external-url=" + proxyURL,
		"--token-auth-file=" + file("tokens.csv"),
		"--tls-cert-file=" + file("serving.crt"),
		"--tls-private-key-file=" + file("serving.key"),
		"--requestheader-client-ca-file=" + file("requestheader-ca.crt"),
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--logical-cluster-admin-kubeconfig=" + file("logical-cluster-admin.kubeconfig"),
		"--external-logical-cluster-admin-kubeconfig=" + file("external-logical-cluster-admin.kubeconfig"),
	}, versioned...)
	shardArgs := func(name string, apiPort, etcdClient, etcdPeer int) []string {
		return append([]string{
			"start",
			"--root-directory=" + file(name),
			fmt.Sprintf("--secure-port=%d", apiPort),
			"--shard-base-url=" + url(apiPort),
			fmt.Sprintf("--embedded-etcd-client-port=%d", etcdClient),
			fmt.Sprintf("--embedded-etcd-peer-port=%d", etcdPeer),
		}, common...)
	}

	k := &Kcp{BaseURL: proxyURL, CAData: ca, shard: RootShard, shardURLs: map[string]string{RootShard: rootURL, SecondShard: shardURL}}
	t.Cleanup(k.Stop)
	start := func(name, bin string, args []string) {
		t.Helper()
		p, err := StartProcess(name, bin, filepath.Join(logDir, name+".log"), args, nil)
		if err != nil {
			t.Fatal(err)
		}
		k.procs = append(k.procs, p)
	}
	start("kcp-root", kcpBin, shardArgs("root", ports[1], ports[2], ports[3]))
	k.waitSharded(t, "the root shard", func(ctx context.Context) bool { return k.readyz(ctx, rootURL) })

	start("kcp-shard-1", kcpBin, append(shardArgs(SecondShard, ports[4], ports[5], ports[6]),
		"--shard-name="+SecondShard,
		"--root-shard-kubeconfig-file="+file("root-shard.kubeconfig"),
		"--cache-kubeconfig="+file("cache.kubeconfig"),
	))
	start("kcp-front-proxy", proxyBin, []string{
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", ports[0]),
		"--root-directory=" + file("front-proxy"),
		"--mapping-file=" + file("mapping.yaml"),
		"--root-kubeconfig=" + file("root-shard.kubeconfig"),
		"--shards-kubeconfig=" + file("shards.kubeconfig"),
		"--token-auth-file=" + file("tokens.csv"),
		"--tls-cert-file=" + file("serving.crt"),
		"--tls-private-key-file=" + file("serving.key"),
	})
	k.waitSharded(t, "the second shard and the front-proxy", func(ctx context.Context) bool {
		if !k.readyz(ctx, shardURL) {
			return false
		}
		c, err := k.AdminClient("root")
		if err != nil || kcp.Ping(ctx, c) != nil {
			return false
		}
		shards := &kcpcorev1alpha1.ShardList{}
		return c.List(ctx, shards) == nil && len(shards.Items) == 2
	})
	return k
}

// shardProcess returns the index of a shard's process in k.procs.
func (k *Kcp) shardProcess(t T, shard string) int {
	t.Helper()
	for i, p := range k.procs {
		if p.Name == "kcp-"+shard {
			return i
		}
	}
	t.Fatalf("no shard %q", shard)
	return -1
}

// StopShard stops a shard, as if its machine went away; its state stays.
func (k *Kcp) StopShard(t T, shard string) {
	t.Helper()
	k.procs[k.shardProcess(t, shard)].Stop(20 * time.Second)
}

// StartShard starts a stopped shard again with its state and waits until
// it is ready.
func (k *Kcp) StartShard(t T, shard string) {
	t.Helper()
	i := k.shardProcess(t, shard)
	old := k.procs[i]
	p, err := old.Restart(strings.TrimSuffix(old.LogPath, ".log") + "-restarted.log")
	if err != nil {
		t.Fatal(err)
	}
	k.procs[i] = p
	k.waitSharded(t, "shard "+shard+" after its restart", func(ctx context.Context) bool { return k.readyz(ctx, k.shardURLs[shard]) })
}

// waitSharded waits until ready holds, failing early when a process exits.
func (k *Kcp) waitSharded(t T, what string, ready func(context.Context) bool) {
	t.Helper()
	WaitFor(t, kcpStartTimeout, what+" to be ready", func(ctx context.Context) (bool, error) {
		for _, p := range k.procs {
			if p.Exited() {
				t.Fatalf("%s exited during start-up, see %s", p.Name, p.LogPath)
			}
		}
		return ready(ctx), nil
	})
}

// writeCertificates writes into dir a CA (ca.crt) with the serving
// certificate of every server (serving.crt/.key, for 127.0.0.1 and
// localhost), and a request-header CA (requestheader-ca.crt) with the
// front-proxy's client certificate (front-proxy-client.crt/.key). It
// returns the CA certificate (PEM).
func writeCertificates(dir string) ([]byte, error) {
	caCert, caKey, err := newCA("e2e-kcp-ca")
	if err != nil {
		return nil, err
	}
	servingCert, servingKey, err := newCertificate(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, caCert, caKey)
	if err != nil {
		return nil, err
	}
	rhCert, rhKey, err := newCA("e2e-requestheader-ca")
	if err != nil {
		return nil, err
	}
	clientCert, clientKey, err := newCertificate(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kcp-front-proxy"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, rhCert, rhKey)
	if err != nil {
		return nil, err
	}

	caPEM := certPEM(caCert)
	files := map[string][]byte{
		"ca.crt":                 caPEM,
		"serving.crt":            certPEM(servingCert),
		"requestheader-ca.crt":   certPEM(rhCert),
		"front-proxy-client.crt": certPEM(clientCert),
	}
	for name, key := range map[string]*ecdsa.PrivateKey{"serving.key": servingKey, "front-proxy-client.key": clientKey} {
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		files[name] = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}

// newCA creates a self-signed CA.
func newCA(commonName string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	return newCertificate(&x509.Certificate{
		Subject: pkix.Name{CommonName: commonName}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil, nil)
}

// newCertificate creates a key and a certificate from template, signed by
// parent (self-signed without one), valid for a day.
func newCertificate(template, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	template.SerialNumber = serial
	template.NotBefore = time.Now().Add(-time.Hour)
	template.NotAfter = time.Now().Add(24 * time.Hour)
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func certPEM(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}
