package session

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/goldentest"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// pageServer serves one HTML page on loopback and counts the requests.
func pageServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><body><h1>Release notes</h1><p>Version <b>2.0</b> drops Python 2.</p><script>track()</script></body></html>`)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func webFetchScenario(url string) *scripted.Scenario {
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "reader", When: scripted.Match{Model: "haiku"}, Reply: []scripted.Block{scripted.Text("Version 2.0 drops Python 2.")}},
		{Name: "fetch", When: scripted.Match{UserText: "read the notes"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("WebFetch", map[string]string{"url": url, "prompt": "What does version 2.0 change?"})}},
		{Name: "done", When: scripted.Match{ToolResult: "WebFetch"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
}

func TestWebFetchEndToEnd(t *testing.T) {
	page, hits := pageServer(t)
	web := buildtest.Companion(t, "keel-web")
	tests := []struct {
		name     string
		settings string
		want     string
		isError  bool
		hits     int32
	}{
		// The test server is on 127.0.0.1: only a rule naming that host may reach it.
		{"explicit rule", `{"permissions": {"allow": ["WebFetch(domain:127.0.0.1)"]}}`, "Version 2.0 drops Python 2.", false, 1},
		{"whole tool allowed", `{"permissions": {"allow": ["WebFetch"]}}`,
			`a private, loopback or link-local address. WebFetch reaches the local machine and private networks only for hosts a permission rule names: the user can add "WebFetch(domain:127.0.0.1)"`, true, 0},
		{"no rule", `{}`, "Permission to use WebFetch was denied", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			h := newHarness(t, webFetchScenario(page.URL+"/notes"), Options{SettingsArgs: []string{tt.settings}, WebBinary: web})
			h.send(t, "read the notes")
			text, isErr := toolResultText(t, h.sess.History())
			if !strings.Contains(text, tt.want) || isErr != tt.isError {
				t.Errorf("tool result (error %v) = %q, want it to contain %q", isErr, text, tt.want)
			}
			if got := hits.Load(); got != tt.hits {
				t.Errorf("page server saw %d requests, want %d", got, tt.hits)
			}
			if tt.hits == 0 {
				return
			}
			// The page went to the small model with the prompt; its request is golden.
			var reader []byte
			for _, r := range h.srv.Requests() {
				if strings.Contains(string(r.Body), `"model":"`+connect.ResolveModel("haiku")+`"`) {
					reader = r.Body
				}
			}
			if reader == nil {
				t.Fatal("no request to the small model")
			}
			goldentest.Check(t, "webfetch_reader_request.json", []byte(strings.ReplaceAll(string(reader), page.URL, "http://PAGE")))
		})
	}
}

func TestWebSearchEndToEnd(t *testing.T) {
	search := scripted.WebSearch("python 2 end of life",
		scripted.WebResult{Title: "Sunsetting Python 2 — \"PSF\" <news>", URL: "https://www.python.org/doc/sunset-python-2/", PageAge: "2020", Text: "We have decided that January 1, 2020, was the day that we sunset Python 2."},
		scripted.WebResult{Title: "Elsewhere", URL: "https://example.com/py2", Text: "filtered out"})
	search.Answer = "Python 2 reached its end of life on January 1, 2020."
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "searcher", When: scripted.Match{HasTool: "web_search"}, Reply: []scripted.Block{search}},
		{Name: "ask", When: scripted.Match{UserText: "when did python 2 die"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("WebSearch", map[string]any{"query": "python 2 end of life", "allowed_domains": []string{"python.org"}})}},
		{Name: "done", When: scripted.Match{ToolResult: "WebSearch"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{SettingsArgs: []string{allowWebSearch}})
	events := h.send(t, "when did python 2 die")
	text, isErr := toolResultText(t, h.sess.History())
	if isErr {
		t.Fatalf("WebSearch failed: %s", text)
	}
	goldentest.Check(t, "websearch_result.txt", []byte(text))
	// The search is counted and priced in the run's result, by model.
	res := result(t, events)
	if res.Usage.WebSearchRequests != 1 {
		t.Errorf("result usage counts %d web searches, want 1", res.Usage.WebSearchRequests)
	}
	var searches int64
	for _, mu := range res.ModelUsage {
		searches += mu.Usage.WebSearchRequests
	}
	if searches != 1 {
		t.Errorf("modelUsage counts %d web searches, want 1: %+v", searches, res.ModelUsage)
	}
	// The search request carried the domain filter in the server tool.
	var searched string
	for _, r := range h.srv.Requests() {
		if strings.Contains(string(r.Body), `"type":"web_search_20250305"`) {
			searched = string(r.Body)
		}
	}
	if !strings.Contains(searched, `{"type":"web_search_20250305","name":"web_search","max_uses":8,"allowed_domains":["python.org"]}`) {
		t.Errorf("search request lacks the web_search tool with the domain filter:\n%s", searched)
	}
}

func TestWebSearchService(t *testing.T) {
	var got atomic.Value
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.Path + "?" + r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"query":"x","results":[{"url":"https://go.dev/doc/go1.18","title":"Go 1.18 Release Notes","content":"Go 1.18 includes an implementation of generic features"},{"url":"https://blocked.example/x","title":"Blocked","content":"no"}]}`)
	}))
	t.Cleanup(searx.Close)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "ask", When: scripted.Match{UserText: "generics"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("WebSearch", map[string]any{"query": "go generics", "blocked_domains": []string{"blocked.example"}})}},
		{Name: "done", When: scripted.Match{ToolResult: "WebSearch"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	settings := fmt.Sprintf(`{"webSearch": {"backend": "searxng", "url": %q}}`, searx.URL)
	h := newHarness(t, sc, Options{SettingsArgs: []string{settings, allowWebSearch}})
	h.send(t, "generics")
	text, isErr := toolResultText(t, h.sess.History())
	if isErr {
		t.Fatalf("WebSearch failed: %s", text)
	}
	goldentest.Check(t, "websearch_searxng_result.txt", []byte(text))
	if q, _ := got.Load().(string); q != "/search?format=json&q=go+generics+-site%3Ablocked.example" {
		t.Errorf("searxng got %q", q)
	}
	for _, r := range h.srv.Requests() {
		if strings.Contains(string(r.Body), "web_search_2") {
			t.Error("with a search service configured, the model's own web search must not be used")
		}
	}
}

// allowWebSearch is the rule a user adds so WebSearch runs without asking: its query leaves
// the machine, so without a rule it is asked about (and refused headless).
const allowWebSearch = `{"permissions": {"allow": ["WebSearch"]}}`

func TestWebSearchOff(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "ask", When: scripted.Match{UserText: "search"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("WebSearch", map[string]any{"query": "anything"})}},
		{Name: "done", When: scripted.Match{ToolResult: "WebSearch"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{SettingsArgs: []string{`{"webSearch": {"backend": "off"}}`, allowWebSearch}})
	h.send(t, "search")
	if text, isErr := toolResultText(t, h.sess.History()); !isErr || text != builtin.WebSearchOff {
		t.Errorf("tool result (error %v) = %q", isErr, text)
	}
}

// TestWebSearchAsks: without a rule, a search is a question; headless nobody answers it, and
// no query leaves the machine.
func TestWebSearchAsks(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "searcher", When: scripted.Match{HasTool: "web_search"}, Reply: []scripted.Block{scripted.Text("must not be asked")}},
		{Name: "ask", When: scripted.Match{UserText: "search"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("WebSearch", map[string]any{"query": "anything"})}},
		{Name: "done", When: scripted.Match{ToolResult: "WebSearch"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{})
	h.send(t, "search")
	if text, isErr := toolResultText(t, h.sess.History()); !isErr || !strings.Contains(text, `add "WebSearch" to permissions.allow`) {
		t.Errorf("tool result (error %v) = %q", isErr, text)
	}
	for _, r := range h.srv.Requests() {
		if r.Rule == "searcher" {
			t.Error("the search ran without permission")
		}
	}
}

func TestNotebookEditEndToEnd(t *testing.T) {
	cwd := t.TempDir()
	nb := filepath.Join(cwd, "analysis.ipynb")
	original := `{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "load",
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "42\n"
     ]
    }
   ],
   "source": [
    "print(6 * 7)"
   ]
  }
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
`
	if err := os.WriteFile(nb, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "read", When: scripted.Match{UserText: "fix the notebook"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": "analysis.ipynb"})}},
		{Name: "edit", When: scripted.Match{ToolResult: "Read", Contains: `<cell id="load" type=code>`}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("NotebookEdit", map[string]string{"notebook_path": nb, "cell_id": "load", "new_source": "print(6 * 9)"})}},
		{Name: "done", When: scripted.Match{ToolResult: "NotebookEdit"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "acceptEdits"})
	h.send(t, "fix the notebook")
	data, _ := os.ReadFile(nb)
	want := strings.Replace(original, `"print(6 * 7)"`, `"print(6 * 9)"`, 1)
	if string(data) != want {
		t.Fatalf("notebook after the edit:\n%s", data)
	}
	var hist []string
	for _, m := range h.sess.History() {
		b, _ := json.Marshal(m)
		hist = append(hist, string(b))
	}
	goldentest.Check(t, "notebookedit_history.jsonl", []byte(strings.ReplaceAll(strings.Join(hist, "\n")+"\n", cwd, "$CWD")))
	// The edit is undone by a rewind, like Edit's.
	prompts := h.sess.undo.UserMessages()
	if _, err := h.sess.undo.Rewind(t.Context(), prompts[0].UUID, true, false); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(nb); string(data) != original {
		t.Errorf("after rewind the notebook is:\n%s", data)
	}
}
