package lsp

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
)

// The few Language Server Protocol messages keel sends and reads, with the specification's
// field names (LSP 3.17). The wire (Content-Length framing, JSON-RPC 2.0) is go.lsp.dev/jsonrpc2.

type initializeParams struct {
	ProcessID             *int               `json:"processId"`
	ClientInfo            clientInfo         `json:"clientInfo"`
	RootURI               string             `json:"rootUri"`
	Capabilities          clientCapabilities `json:"capabilities"`
	InitializationOptions json.RawMessage    `json:"initializationOptions,omitempty"`
	WorkspaceFolders      []workspaceFolder  `json:"workspaceFolders"`
}

type clientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type workspaceFolder struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
}

// clientCapabilities says what keel does with a server: it syncs whole documents, reads
// diagnostics and answers configuration requests — nothing else.
type clientCapabilities struct {
	Workspace struct {
		Configuration    bool `json:"configuration"`
		WorkspaceFolders bool `json:"workspaceFolders"`
	} `json:"workspace"`
	TextDocument struct {
		Synchronization struct {
			DidSave bool `json:"didSave"`
		} `json:"synchronization"`
		PublishDiagnostics struct {
			VersionSupport bool `json:"versionSupport"`
		} `json:"publishDiagnostics"`
	} `json:"textDocument"`
	General struct {
		PositionEncodings []string `json:"positionEncodings"`
	} `json:"general"`
}

type textDocumentItem struct {
	URI        string `json:"uri"`
	LanguageID string `json:"languageId"`
	Version    int    `json:"version"`
	Text       string `json:"text"`
}

type didOpenParams struct {
	TextDocument textDocumentItem `json:"textDocument"`
}

type versionedDocument struct {
	URI     string `json:"uri"`
	Version int    `json:"version"`
}

type documentID struct {
	URI string `json:"uri"`
}

type contentChange struct {
	Text string `json:"text"`
}

type didChangeParams struct {
	TextDocument   versionedDocument `json:"textDocument"`
	ContentChanges []contentChange   `json:"contentChanges"`
}

type didSaveParams struct {
	TextDocument documentID `json:"textDocument"`
	Text         string     `json:"text"`
}

type publishDiagnosticsParams struct {
	URI         string          `json:"uri"`
	Version     *int            `json:"version"`
	Diagnostics []lspDiagnostic `json:"diagnostics"`
}

type lspDiagnostic struct {
	Range struct {
		Start struct {
			Line      int `json:"line"`
			Character int `json:"character"`
		} `json:"start"`
	} `json:"range"`
	Severity int             `json:"severity"`
	Code     json.RawMessage `json:"code"`
	Source   string          `json:"source"`
	Message  string          `json:"message"`
}

type configurationParams struct {
	Items []struct {
		Section string `json:"section"`
	} `json:"items"`
}

// fileURI is the file: URI of an absolute path.
func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// uriPath is the path of a file: URI, whatever escaping the server chose.
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return strings.TrimPrefix(uri, "file://")
	}
	return filepath.Clean(filepath.FromSlash(u.Path))
}
