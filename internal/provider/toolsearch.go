package provider

// NativeToolSearcher is a provider whose API loads deferred tools itself: it sends tools with
// [ToolSpec.DeferLoading] by name only, with a server-side search tool the model uses to load
// them, so the caller needs no search tool of its own. A provider without it gets every tool
// in full (the caller defers with its own ToolSearch tool instead). NativeToolSearch names
// that server-side tool, as the model calls it.
type NativeToolSearcher interface {
	NativeToolSearch() string
}

// HelperModeler is a provider whose API has a small, fast model for the requests tools make
// themselves (WebFetch's page reader): HelperModel names it. Without one, helpers ask the
// session's own model.
type HelperModeler interface {
	HelperModel() string
}

// capability finds the ability T on p or a provider it wraps.
func capability[T any](p Provider) (T, bool) {
	for p != nil {
		if c, ok := p.(T); ok {
			return c, true
		}
		u, ok := p.(Unwrapper)
		if !ok {
			break
		}
		p = u.Unwrap()
	}
	var zero T
	return zero, false
}

// NativeToolSearch names the server-side tool search of p (or a provider it wraps); "" when
// it has none.
func NativeToolSearch(p Provider) string {
	if n, ok := capability[NativeToolSearcher](p); ok {
		return n.NativeToolSearch()
	}
	return ""
}

// HelperModel is the model helpers ask on p (or a provider it wraps); "" when it has none of
// its own.
func HelperModel(p Provider) string {
	if h, ok := capability[HelperModeler](p); ok {
		return h.HelperModel()
	}
	return ""
}

// Unwrapper is a provider that wraps another ([WithRetries] does), so capabilities of the inner
// provider stay visible.
type Unwrapper interface {
	Unwrap() Provider
}

// SupportsNativeToolSearch reports whether p, or a provider it wraps, has native deferred
// tool loading.
func SupportsNativeToolSearch(p Provider) bool { return NativeToolSearch(p) != "" }

// ServerWebSearcher is a provider whose API runs web searches itself, through a server tool
// in the request (Anthropic's web_search), returning the results and cited answers as
// content blocks.
type ServerWebSearcher interface {
	ServerWebSearch() bool
}

// SupportsServerWebSearch reports whether p, or a provider it wraps, runs web searches
// server-side.
func SupportsServerWebSearch(p Provider) bool {
	for p != nil {
		if s, ok := p.(ServerWebSearcher); ok {
			return s.ServerWebSearch()
		}
		u, ok := p.(Unwrapper)
		if !ok {
			return false
		}
		p = u.Unwrap()
	}
	return false
}

// ToolResultClearer is a provider whose API clears old tool results itself when a request
// asks it to ([Request.ClearToolResults]).
type ToolResultClearer interface {
	ClearsToolResults() bool
}

// SupportsToolResultClearing reports whether p, or a provider it wraps, clears tool results
// server-side.
func SupportsToolResultClearing(p Provider) bool {
	c, ok := capability[ToolResultClearer](p)
	return ok && c.ClearsToolResults()
}
