package envvar

import "testing"

func TestTruthy(t *testing.T) {
	for s, want := range map[string]bool{
		"1": true, "true": true, "TRUE": true, " TRUE ": true, " yes ": true, "Yes": true, "on": true,
		"": false, "0": false, "false": false, "no": false, "off": false, "2": false, "enabled": false,
	} {
		if got := Truthy(s); got != want {
			t.Errorf("Truthy(%q) = %v, want %v", s, got, want)
		}
	}
}
