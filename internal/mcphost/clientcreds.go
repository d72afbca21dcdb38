package mcphost

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// clientCredentials gets a token with the client-credentials grant (machine to machine, no
// person): the client authenticates with its secret (client_secret_basic or _post, as the
// server supports) or with a JWT signed by its private key (private_key_jwt, RFC 7523).
func (h *oauthFlow) clientCredentials(ctx context.Context, req *http.Request, challenges []oauthex.Challenge) error {
	o := h.cfg.OAuth
	prm, err := h.resourceMetadata(ctx, challenges, req.URL.String())
	if err != nil {
		return fmt.Errorf("authorize %s: %w", h.cfg.Name, err)
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], h.hc)
	if err != nil {
		return fmt.Errorf("authorize %s: authorization server metadata: %w", h.cfg.Name, err)
	}
	if asm == nil {
		return fmt.Errorf("authorize %s: authorization server %s publishes no metadata", h.cfg.Name, prm.AuthorizationServers[0])
	}
	scopes := strings.Fields(challengeParam(challenges, "scope"))
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	h.mu.Lock()
	scopes = union(union(h.granted, scopes), o.Scopes)
	h.mu.Unlock()
	cc := &clientcredentials.Config{ClientID: o.ClientID, TokenURL: asm.TokenEndpoint, Scopes: scopes,
		EndpointParams: url.Values{"resource": {prm.Resource}}}
	var ts oauth2.TokenSource
	hctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.hc)
	if o.PrivateKeyFile != "" {
		key, err := loadPrivateKey(o.PrivateKeyFile)
		if err != nil {
			return fmt.Errorf("authorize %s: %w", h.cfg.Name, err)
		}
		alg := o.SigningAlgorithm
		if alg == "" {
			alg = "ES256"
		}
		cc.AuthStyle = oauth2.AuthStyleInParams
		ts = oauth2.ReuseTokenSource(nil, &assertionSource{cc: cc, ctx: hctx, key: key, alg: alg, audience: asm.Issuer})
	} else {
		cc.ClientSecret = h.m.clientSecret(h.cfg)
		if cc.ClientSecret == "" {
			return fmt.Errorf("authorize %s: the client_credentials grant needs a client secret (oauth.clientSecret, `keel mcp add --client-secret` or MCP_CLIENT_SECRET) or oauth.privateKeyFile", h.cfg.Name)
		}
		cc.AuthStyle = secretStyle(asm.TokenEndpointAuthMethodsSupported)
		ts = cc.TokenSource(hctx)
	}
	if _, err := ts.Token(); err != nil {
		return fmt.Errorf("authorize %s: token request: %w", h.cfg.Name, err)
	}
	h.setToken(ts, scopes)
	h.authorized()
	h.m.logger.Info("mcp oauth: client credentials granted", "server", h.cfg.Name)
	return nil
}

// secretStyle picks how the secret goes to the token endpoint: HTTP Basic (RFC 6749's
// default) unless the server takes only the form parameter.
func secretStyle(supported []string) oauth2.AuthStyle {
	for _, m := range supported {
		if m == "client_secret_basic" {
			return oauth2.AuthStyleInHeader
		}
	}
	for _, m := range supported {
		if m == "client_secret_post" {
			return oauth2.AuthStyleInParams
		}
	}
	return oauth2.AuthStyleInHeader
}

// resourceMetadata finds the protected resource metadata (RFC 9728): where the challenge
// says, else at the well-known paths of the MCP endpoint and of its root.
func (h *oauthFlow) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge, resource string) (*oauthex.ProtectedResourceMetadata, error) {
	ru, err := url.Parse(resource)
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	type candidate struct{ url, resource string }
	var cands []candidate
	if u := challengeParam(challenges, "resource_metadata"); u != "" {
		cands = append(cands, candidate{u, resource})
	}
	at := *ru
	at.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	root := *ru
	root.Path = "/.well-known/oauth-protected-resource"
	bare := *ru
	bare.Path = ""
	cands = append(cands, candidate{at.String(), resource}, candidate{root.String(), bare.String()})
	var errs []error
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, h.hc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prm != nil && len(prm.AuthorizationServers) > 0 {
			return prm, nil
		}
	}
	return nil, fmt.Errorf("no protected resource metadata naming an authorization server: %w", errors.Join(errs...))
}

// assertionSource gets client-credentials tokens authenticated by a fresh signed JWT each
// time (RFC 7523 §2.2): iss and sub are the client ID, aud the authorization server's issuer.
type assertionSource struct {
	cc       *clientcredentials.Config
	ctx      context.Context
	key      crypto.Signer
	alg      string
	audience string
}

func (s *assertionSource) Token() (*oauth2.Token, error) {
	now := time.Now()
	claims := jwt.RegisteredClaims{Issuer: s.cc.ClientID, Subject: s.cc.ClientID, Audience: jwt.ClaimStrings{s.audience},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)), ID: rand.Text()}
	method := jwt.GetSigningMethod(s.alg)
	if method == nil {
		return nil, fmt.Errorf("signing algorithm %q is not supported", s.alg)
	}
	signed, err := jwt.NewWithClaims(method, claims).SignedString(s.key)
	if err != nil {
		return nil, fmt.Errorf("sign client assertion: %w", err)
	}
	cc := *s.cc
	cc.EndpointParams = url.Values{}
	for k, v := range s.cc.EndpointParams {
		cc.EndpointParams[k] = v
	}
	cc.EndpointParams.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
	cc.EndpointParams.Set("client_assertion", signed)
	return cc.Token(s.ctx)
}

// loadPrivateKey reads a PEM private key (PKCS #8, SEC 1 EC or PKCS #1 RSA).
func loadPrivateKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read private key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("private key %s: no PEM block", path)
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("private key %s: %w", path, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key %s: %T cannot sign", path, key)
	}
	return signer, nil
}
