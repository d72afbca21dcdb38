package sandbox

import (
	"os"
	"slices"
	"strings"
)

// proxyEnv sets the proxy variables (both spellings) to the loopback port.
func proxyEnv(env []string, port string) []string {
	httpURL, socksURL := "http://127.0.0.1:"+port, "socks5h://127.0.0.1:"+port
	set := map[string]string{
		"HTTP_PROXY": httpURL, "HTTPS_PROXY": httpURL, "ALL_PROXY": socksURL,
		"http_proxy": httpURL, "https_proxy": httpURL, "all_proxy": socksURL,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
		"KEEL_SANDBOX": "1",
	}
	env = slices.DeleteFunc(env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		_, ok := set[k]
		return ok
	})
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// credentials are the variables that carry keel's own secrets: its model providers' keys and
// tokens, its telemetry exporters' headers, its MCP OAuth clients' secret and its NATS URL
// (which may hold a user and password). keel reads them itself; a command the model
// runs in the sandbox never needs them, and with any allowed domain could send them out.
var credentials = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_FOUNDRY_API_KEY",
	"CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "AWS_BEARER_TOKEN_BEDROCK",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
	"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"MCP_CLIENT_SECRET", "KEEL_NATS_URL",
}

// WithoutCredentials is env (nil: keel's own environment) without keel's own credentials:
// the environment of a command the model runs inside the sandbox (Bash, a skill's "!" line,
// `keel sandbox`). The user's other variables (a GITHUB_TOKEN a script needs) stay; MCP
// servers and hooks keep what their configuration gives them.
func WithoutCredentials(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(credentials, k)
	})
}
