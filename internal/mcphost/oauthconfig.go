package mcphost

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// OAuth grant types a server entry may name.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// OAuthConfig is a server entry's "oauth" object: Claude Code's clientId, clientSecret,
// scopes and callbackPort, plus keel's machine-to-machine keys. Without it keel registers
// itself dynamically (RFC 7591) where the authorization server allows.
type OAuthConfig struct {
	// ClientID is a client pre-registered with the authorization server, or the HTTPS URL of
	// keel's client ID metadata document, used where the server advertises support for them.
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret is the pre-registered client's secret; if empty, the one stored by
	// `keel mcp add --client-secret`, else $MCP_CLIENT_SECRET.
	ClientSecret string `json:"clientSecret,omitempty"`
	// Scopes are requested besides those the server asks for.
	Scopes Scopes `json:"scopes,omitempty"`
	// CallbackPort fixes the loopback port of the redirect (a pre-registered redirect URI
	// names one); 0 picks a free port.
	CallbackPort int `json:"callbackPort,omitempty"`
	// GrantType is authorization_code (a person signs in; the default) or client_credentials
	// (no person: the client authenticates with its secret, or with a JWT signed by
	// PrivateKeyFile).
	GrantType string `json:"grantType,omitempty"`
	// PrivateKeyFile is a PEM private key for private_key_jwt client authentication (RFC
	// 7523), relative to the configuration file; SigningAlgorithm is its JWS algorithm
	// (ES256 if empty).
	PrivateKeyFile   string `json:"privateKeyFile,omitempty"`
	SigningAlgorithm string `json:"signingAlgorithm,omitempty"`
}

// Scopes is a list of OAuth scopes, written in a file as an array or one space-separated
// string.
type Scopes []string

// UnmarshalJSON implements json.Unmarshaler.
func (s *Scopes) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = strings.Fields(one)
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("scopes: want a string or an array of strings")
	}
	*s = list
	return nil
}

// cimd reports whether the client ID is the URL of a client ID metadata document.
func (o *OAuthConfig) cimd() bool {
	if o == nil {
		return false
	}
	u, err := url.Parse(o.ClientID)
	return err == nil && u.Scheme == "https" && u.Path != "" && u.Path != "/"
}

var signingAlgorithms = []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "EdDSA"}

// validateOAuth checks the oauth object of an HTTP or SSE server.
func validateOAuth(s *ServerConfig) (Problem, bool) {
	o := s.OAuth
	if o == nil {
		return Problem{}, true
	}
	if s.Type == TypeStdio {
		return Problem{Path: "oauth", Msg: "only HTTP and SSE servers use OAuth"}, false
	}
	switch o.GrantType {
	case "", GrantAuthorizationCode, GrantClientCredentials:
	default:
		return Problem{Path: "oauth.grantType", Msg: fmt.Sprintf("%q is not one of %s, %s", o.GrantType, GrantAuthorizationCode, GrantClientCredentials)}, false
	}
	if o.CallbackPort < 0 || o.CallbackPort > 65535 {
		return Problem{Path: "oauth.callbackPort", Msg: fmt.Sprintf("%d is not a port (1-65535)", o.CallbackPort)}, false
	}
	if o.SigningAlgorithm != "" && !slices.Contains(signingAlgorithms, o.SigningAlgorithm) {
		return Problem{Path: "oauth.signingAlgorithm", Msg: fmt.Sprintf("%q is not one of %s", o.SigningAlgorithm, strings.Join(signingAlgorithms, ", "))}, false
	}
	if o.GrantType == GrantClientCredentials && o.ClientID == "" {
		return Problem{Path: "oauth.clientId", Msg: "missing: the client_credentials grant needs a pre-registered client"}, false
	}
	return Problem{}, true
}

// resolveKeyFile makes a relative private key path relative to the configuration file.
func resolveKeyFile(s *ServerConfig, file string) {
	o := s.OAuth
	if o == nil || o.PrivateKeyFile == "" || filepath.IsAbs(o.PrivateKeyFile) || strings.HasPrefix(file, "--mcp-config[") {
		return
	}
	o.PrivateKeyFile = filepath.Join(filepath.Dir(file), o.PrivateKeyFile)
}
