package natscoord_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natsserver"
	"github.com/keel-dev/keel/internal/waittest"
)

// selfSigned makes a certificate for 127.0.0.1 and writes it, as the CA file a client
// trusts, to dir.
func selfSigned(t *testing.T, dir string) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "keel test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, ca
}

// A server that requires TLS: a handle that trusts its CA file works; one without it is
// refused with an error that names the server.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	cert, ca := selfSigned(t, dir)
	srv, err := natsserver.Start(natsserver.Options{Name: "tls", StoreDir: filepath.Join(dir, "store"),
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	url := strings.Replace(srv.URL(), "nats://", "tls://", 1)
	ctx := waittest.Context(t)
	// The CA file's path as settings may give it, with a variable to expand.
	t.Setenv("KEEL_TEST_CA", ca)
	b, err := natscoord.Open(ctx, natscoord.Options{URL: url, Team: "secure", TLS: natscoord.TLS{CAFile: "$KEEL_TEST_CA"}})
	if err != nil {
		t.Fatalf("open with the CA: %v", err)
	}
	defer b.Close()
	if err := b.Mailbox().Send(ctx, coord.Message{ID: coord.NewID(), From: "a", To: "b", Text: "over TLS"}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Mailbox().Fetch(ctx, "b", 0); err != nil || len(got) != 1 {
		t.Errorf("fetch over TLS: %v, %v", got, err)
	}
	_, err = natscoord.Open(ctx, natscoord.Options{URL: url, Team: "secure"})
	if err == nil || !strings.Contains(err.Error(), url) {
		t.Errorf("open without trusting the server's certificate: %v; want an error naming %s", err, url)
	}
}
