package permission

import "testing"

func TestExplicit(t *testing.T) {
	rule := func(text string, b Behavior) Rule {
		r, err := ParseRule(text, b, Source{Name: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	fetch := func(u string) Request { return Request{Tool: "WebFetch", URL: u, ReadOnly: true} }
	tests := []struct {
		name string
		pol  Policy
		req  Request
		want bool
	}{
		{"domain rule", Policy{Rules: []Rule{rule("WebFetch(domain:localhost)", Allow)}}, fetch("http://localhost:8080/x"), true},
		{"wildcard rule", Policy{Rules: []Rule{rule("WebFetch(domain:*.corp.example)", Allow)}}, fetch("https://wiki.corp.example/"), true},
		{"ip rule", Policy{Rules: []Rule{rule("WebFetch(domain:127.0.0.1)", Allow)}}, fetch("http://127.0.0.1:9/"), true},
		{"other host", Policy{Rules: []Rule{rule("WebFetch(domain:localhost)", Allow)}}, fetch("http://127.0.0.1/"), false},
		{"bare tool rule", Policy{Rules: []Rule{rule("WebFetch", Allow)}}, fetch("http://localhost/"), false},
		{"bypass mode", Policy{Mode: ModeBypassPermissions}, fetch("http://localhost/"), false},
		{"ask rule", Policy{Rules: []Rule{rule("WebFetch(domain:localhost)", Ask)}}, fetch("http://localhost/"), false},
		{"not a fetch", Policy{Rules: []Rule{rule("WebFetch(domain:localhost)", Allow)}}, Request{Tool: "Bash", Command: "curl localhost"}, false},
		{"ceiling lacks it", Policy{Rules: []Rule{rule("WebFetch(domain:localhost)", Allow)}, Ceilings: []Policy{{}}}, fetch("http://localhost/"), false},
		{"ceiling has it", Policy{Rules: []Rule{rule("WebFetch(domain:localhost)", Allow)},
			Ceilings: []Policy{{Rules: []Rule{rule("WebFetch(domain:localhost)", Allow)}}}}, fetch("http://localhost/"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(Config{Policy: tt.pol}).Explicit(tt.req); got != tt.want {
				t.Errorf("Explicit = %v, want %v", got, tt.want)
			}
		})
	}
}
