package webfetch

import "testing"

// Text that needs no charset table is decoded in keel; the rest goes to keel-web.
func TestUTF8Text(t *testing.T) {
	tests := []struct {
		name, header, body string
		want               string
		ok                 bool
	}{
		{"utf-8 mark", "text/plain; charset=iso-8859-1", "\xef\xbb\xbfcaf\xc3\xa9", "\ufeffcafé", true},
		{"utf-16 mark", "text/plain", "\xff\xfec\x00", "", false},
		{"declared utf-8", "text/plain; charset=UTF8", "ok \xff", "ok \uFFFD", true},
		{"declared latin1", "text/plain; charset=iso-8859-1", "plain ascii", "", false},
		{"undeclared utf-8", "application/json", `{"a": "é"}`, `{"a": "é"}`, true},
		{"undeclared other bytes", "text/plain", "caf\xe9", "", false},
	}
	for _, tt := range tests {
		got, ok := utf8Text([]byte(tt.body), tt.header)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: utf8Text(%q, %q) = %q, %v; want %q, %v", tt.name, tt.body, tt.header, got, ok, tt.want, tt.ok)
		}
	}
}
