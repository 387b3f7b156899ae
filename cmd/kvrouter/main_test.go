package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/router/config"
)

// A non-loopback listen address without an admin token does not start:
// exit 2, naming the fix. (Nothing is bound: the config is refused
// before listening.)
func TestRefusesOpenNonLoopbackListen(t *testing.T) {
	t.Setenv(config.EnvAdminToken, "")
	t.Setenv(config.EnvAPIToken, "")
	var stdout, stderr syncBuffer
	code := run(t.Context(), []string{"--block-size", "16", "--listen", "0.0.0.0:8090"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "not a loopback address and no admin token")
	assert.Contains(t, stderr.String(), config.EnvAdminToken)
}

// freePort is a loopback address nothing listens on (just now).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kvrouter-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// With a certificate kvrouter serves HTTPS, and the admin token from a
// file guards state changes; it never appears in the log.
func TestServesTLSWithTokenFile(t *testing.T) {
	t.Setenv(config.EnvAdminToken, "")
	t.Setenv(config.EnvAPIToken, "")
	certFile, keyFile, pool := selfSigned(t)
	tokenFile := filepath.Join(t.TempDir(), "admin")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret-admin\n"), 0o600))
	addr := freePort(t)
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--block-size", "16", "--listen", addr, "--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--admin-token-file", tokenFile, "--snapshot-interval", "0s"}, &stdout, &stderr)
	}()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	require.Eventually(t, func() bool {
		resp, err := client.Get("https://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "HTTPS /healthz; log: %s", stderr.String())

	post := func(auth string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://"+addr+"/v1/workers", nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, post(""))
	assert.Equal(t, http.StatusBadRequest, post("Bearer s3cret-admin"), "past auth: an empty body")

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "%s", stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("kvrouter did not stop")
	}
	assert.NotContains(t, stderr.String(), "s3cret-admin")
	assert.Contains(t, stderr.String(), "admin_token=true")
}

// syncBuffer is a bytes.Buffer safe for the logger's writes while a
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
