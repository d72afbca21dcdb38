package otelexport

import (
	"path/filepath"
	"strings"
)

// languages name a file's language by extension, for code_edit_tool.decision.
var languages = map[string]string{
	".go": "Go", ".ts": "TypeScript", ".tsx": "TypeScript", ".js": "JavaScript", ".jsx": "JavaScript", ".mjs": "JavaScript",
	".py": "Python", ".rs": "Rust", ".java": "Java", ".kt": "Kotlin", ".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++",
	".hpp": "C++", ".cs": "C#", ".rb": "Ruby", ".php": "PHP", ".swift": "Swift", ".md": "Markdown", ".json": "JSON",
	".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".sh": "Shell", ".bash": "Shell", ".html": "HTML", ".css": "CSS",
	".sql": "SQL", ".ipynb": "Jupyter Notebook",
}

func language(path string) string {
	if l, ok := languages[strings.ToLower(filepath.Ext(path))]; ok {
		return l
	}
	return "unknown"
}
