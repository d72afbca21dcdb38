package sandbox

import (
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
