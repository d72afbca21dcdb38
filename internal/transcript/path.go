package transcript

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// maxDirName keeps a sanitised cwd inside common file-name limits (255 bytes).
const maxDirName = 200

// SanitizeCWD turns a working directory into one directory name: every byte that is not an
// ASCII letter or digit becomes '-'. Long paths are cut and suffixed with a hash of the whole
// path, so two long paths never share a directory.
func SanitizeCWD(cwd string) string {
	b := []byte(filepath.Clean(cwd))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	if len(b) <= maxDirName {
		return string(b)
	}
	sum := sha256.Sum256([]byte(cwd))
	return string(b[:maxDirName-17]) + "-" + hex.EncodeToString(sum[:8])
}

// ProjectDir is the directory holding the sessions started in cwd: $KEEL_HOME/projects/<cwd>.
func ProjectDir(home, cwd string) string {
	return filepath.Join(home, "projects", SanitizeCWD(cwd))
}

// SessionPath is the transcript of session id started in cwd.
func SessionPath(home, cwd, id string) string {
	return filepath.Join(ProjectDir(home, cwd), id+".jsonl")
}

// CheckID rejects ids that cannot be a file name, so an id from the command line can never
// reach outside the project directory.
func CheckID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`+"\x00") {
		return fmt.Errorf("session id %q is not a valid file name", id)
	}
	return nil
}

// SessionDir is the folder beside a transcript that holds its subagents' transcripts.
func SessionDir(sessionPath string) string {
	return strings.TrimSuffix(sessionPath, ".jsonl")
}

// AgentPaths returns a subagent's transcript and meta file inside its session's folder:
// <session>/subagents/agent-<id>.jsonl and agent-<id>.meta.json.
func AgentPaths(sessionPath, agentID string) (transcript, meta string) {
	base := filepath.Join(SessionDir(sessionPath), "subagents", "agent-"+agentID)
	return base + ".jsonl", base + ".meta.json"
}

// AgentMeta describes a subagent transcript, so it can be found and continued.
type AgentMeta struct {
	AgentID         string `json:"agentId"`
	AgentType       string `json:"agentType"`
	Description     string `json:"description,omitempty"`
	ParentSessionID string `json:"parentSessionId"`
	ToolUseID       string `json:"toolUseId,omitempty"`
}

// WriteAgentMeta writes m to path atomically (temp file, sync, rename).
func WriteAgentMeta(path string, m AgentMeta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode agent meta %s: %w", path, err)
	}
	if err := writeFileAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write agent meta: %w", err)
	}
	return nil
}

// ReadAgentMeta reads a subagent's meta file.
func ReadAgentMeta(path string) (AgentMeta, error) {
	var m AgentMeta
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("read agent meta: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("read agent meta %s: %w", path, err)
	}
	return m, nil
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o600)
}
