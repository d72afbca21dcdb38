package scripted

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func getModels(t *testing.T, s *Server, query string, headers bool) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+"/v1/models"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if headers {
		req.Header.Set("x-api-key", "any-key")
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
	return resp.StatusCode, out
}

func ids(page map[string]any) []string {
	var out []string
	for _, m := range page["data"].([]any) {
		out = append(out, m.(map[string]any)["id"].(string))
	}
	return out
}

// TestListModels: GET /v1/models lists the scenario's models newest first in the API's shape,
// pages with limit and after_id/before_id, and wants the API's headers.
func TestListModels(t *testing.T) {
	sc, err := ParseScenario("models.yaml", []byte(`models:
  - {id: claude-opus-5-5, created_at: 2026-09-22, max_input_tokens: 1000000, max_tokens: 128000}
  - {id: claude-opus-5-7, display_name: Claude Opus 5.7, created_at: "2027-01-05T00:00:00Z"}
  - {id: claude-haiku-5-5, created_at: 2026-10-07}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, sc, Options{})
	status, page := getModels(t, s, "", true)
	if status != 200 || page["has_more"] != false || page["first_id"] != "claude-opus-5-7" || page["last_id"] != "claude-opus-5-5" {
		t.Fatalf("status %d, page %v", status, page)
	}
	if diff := cmp.Diff([]string{"claude-opus-5-7", "claude-haiku-5-5", "claude-opus-5-5"}, ids(page)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	first := page["data"].([]any)[2].(map[string]any)
	if first["type"] != "model" || first["max_input_tokens"] != 1e6 || first["created_at"] != "2026-09-22T00:00:00Z" || first["display_name"] != "claude-opus-5-5" {
		t.Errorf("entry = %v", first)
	}
	_, p1 := getModels(t, s, "?limit=2", true)
	_, p2 := getModels(t, s, "?limit=2&after_id="+p1["last_id"].(string), true)
	_, p0 := getModels(t, s, "?limit=1&before_id=claude-haiku-5-5", true)
	if p1["has_more"] != true || p2["has_more"] != false || !cmp.Equal(ids(p2), []string{"claude-opus-5-5"}) || !cmp.Equal(ids(p0), []string{"claude-opus-5-7"}) {
		t.Errorf("pages: %v / %v / %v", p1, p2, p0)
	}
	if status, _ := getModels(t, s, "", false); status != 401 {
		t.Errorf("without a key: status %d, want 401", status)
	}
	if status, body := getModels(t, s, "?limit=0", true); status != 400 || !strings.Contains(body["error"].(map[string]any)["message"].(string), "limit") {
		t.Errorf("limit=0: %d %v", status, body)
	}
	if len(s.Requests()) != 0 {
		t.Error("listing models was recorded as a model request")
	}
	// Without models in the scenario, the server lists keel's own table.
	if _, page := getModels(t, start(t, &Scenario{}, Options{}), "?limit=1000", true); !strings.Contains(strings.Join(ids(page), " "), "claude-sonnet-5-5") {
		t.Errorf("default list = %v", ids(page))
	}
}

func TestModelsYAMLErrors(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"models:\n  - {display_name: x}\n", "m.yaml:2: a model needs an id"},
		{"models:\n  - {id: a, created_at: last tuesday}\n", `m.yaml:2: created_at "last tuesday" is not a date`},
		{"models:\n  - {id: a, size: 3}\n", "m.yaml:2: "},
	} {
		_, err := ParseScenario("m.yaml", []byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.yaml, err, tt.want)
		}
	}
}
