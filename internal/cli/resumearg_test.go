package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel"
)

func TestResumeWithoutValue(t *testing.T) {
	pick := "--resume=" + keel.ResumeChoose
	for _, tt := range []struct{ in, want []string }{
		{[]string{"--resume"}, []string{pick}},
		{[]string{"-r", "--model", "x"}, []string{pick, "--model", "x"}},
		{[]string{"--resume", "3f2a"}, []string{"--resume", "3f2a"}},
		{[]string{"-r", "my title", "-p"}, []string{"-r", "my title", "-p"}},
		{[]string{"--resume=3f2a"}, []string{"--resume=3f2a"}},
		{[]string{"--", "--resume"}, []string{"--", "--resume"}},
	} {
		if diff := cmp.Diff(tt.want, resumeWithoutValue(tt.in)); diff != "" {
			t.Errorf("resumeWithoutValue(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}
