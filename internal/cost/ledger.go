package cost

import (
	"maps"
	"slices"

	"github.com/keel-dev/keel/internal/message"
)

// Entry is what one model was used for: its tokens, their price, and how many requests.
type Entry struct {
	Usage    message.Usage
	USD      float64
	Requests int
	// Unpriced is true when the model has no known price: USD is 0 and must not be shown as
	// a price.
	Unpriced bool
}

// Ledger sums usage and cost by model, pricing each request as it is added: a price may
// depend on the request's own prompt length. The zero Ledger is empty and ready; a Ledger is
// not safe for concurrent use.
type Ledger struct {
	byModel map[string]Entry
}

// Add records one request's usage on model (the id the API reported).
func (l *Ledger) Add(model string, u message.Usage) {
	if l.byModel == nil {
		l.byModel = map[string]Entry{}
	}
	e := l.byModel[model]
	usd, ok := USD(model, u)
	e.Usage, e.USD, e.Requests, e.Unpriced = e.Usage.Add(u), e.USD+usd, e.Requests+1, e.Unpriced || !ok
	l.byModel[model] = e
}

// Merge adds every entry of o.
func (l *Ledger) Merge(o Ledger) {
	for model, oe := range o.byModel {
		if l.byModel == nil {
			l.byModel = map[string]Entry{}
		}
		e := l.byModel[model]
		e.Usage, e.USD, e.Requests, e.Unpriced = e.Usage.Add(oe.Usage), e.USD+oe.USD, e.Requests+oe.Requests, e.Unpriced || oe.Unpriced
		l.byModel[model] = e
	}
}

// Since is what l holds beyond before, an earlier copy of the same ledger (see [Ledger.Clone]).
func (l Ledger) Since(before Ledger) Ledger {
	out := Ledger{}
	for model, e := range l.byModel {
		b := before.byModel[model]
		if e.Requests == b.Requests {
			continue
		}
		if out.byModel == nil {
			out.byModel = map[string]Entry{}
		}
		out.byModel[model] = Entry{Usage: e.Usage.Sub(b.Usage), USD: e.USD - b.USD, Requests: e.Requests - b.Requests, Unpriced: e.Unpriced}
	}
	return out
}

// Clone returns an independent copy.
func (l Ledger) Clone() Ledger { return Ledger{byModel: maps.Clone(l.byModel)} }

// Models lists the models used, sorted.
func (l Ledger) Models() []string { return slices.Sorted(maps.Keys(l.byModel)) }

// Entry returns what model was used for.
func (l Ledger) Entry(model string) Entry { return l.byModel[model] }

// Total sums every model: the usage, the price of the priced ones, and whether every model
// (and whether any) was priced.
func (l Ledger) Total() (u message.Usage, usd float64, allPriced, anyPriced bool) {
	allPriced = true
	for _, e := range l.byModel {
		u, usd = u.Add(e.Usage), usd+e.USD
		allPriced = allPriced && !e.Unpriced
		anyPriced = anyPriced || !e.Unpriced
	}
	return u, usd, allPriced, anyPriced || len(l.byModel) == 0
}
