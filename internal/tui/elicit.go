package tui

import (
	"context"
	"fmt"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Elicitor carries MCP servers' questions (elicitation/create) from the session to the UI,
// which shows them as a form (or, in URL mode, as an address to open). Pass its Elicit
// method as keel.Options.Elicit before the session exists, then give the Elicitor to [Run].
type Elicitor struct {
	reqs chan *form
}

// NewElicitor returns an Elicitor with no UI attached yet; questions wait until one reads
// them.
func NewElicitor() *Elicitor { return &Elicitor{reqs: make(chan *form)} }

// Elicit shows the question and blocks until the user answers (accept with the form's
// content, decline, or cancel) or ctx ends: the server withdrew it, or the run was
// interrupted.
func (e *Elicitor) Elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	f, err := newForm(ctx, server, p)
	if err != nil {
		return nil, err
	}
	select {
	case e.reqs <- f:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case res := <-f.reply:
		return res, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// form is one open question. The Elicit goroutine builds it and hands it to the UI, which
// owns it from then on and answers on reply exactly once.
type form struct {
	ctx      context.Context
	server   string
	p        *mcp.ElicitParams
	url      bool
	fields   []*formField
	schema   *jsonschema.Resolved // the whole requested schema
	reply    chan *mcp.ElicitResult
	answered chan struct{} // closed with the answer
	// focus is the field (0…len(fields)-1) or button (len(fields)+i, see formButtons) the
	// keys go to.
	focus int
	err   string // why Accept did not go through
}

// formButtons are the actions under the fields, in order.
var formButtons = []string{"accept", "decline", "cancel"}

func newForm(ctx context.Context, server string, p *mcp.ElicitParams) (*form, error) {
	f := &form{ctx: ctx, server: server, p: p, url: p.Mode == "url", reply: make(chan *mcp.ElicitResult, 1), answered: make(chan struct{})}
	if !f.url {
		fields, whole, err := formSchema(p.RequestedSchema, newFieldInput)
		if err != nil {
			return nil, fmt.Errorf("show the form of %s: %w", server, err)
		}
		f.fields, f.schema = fields, whole
	}
	f.setFocus(0)
	return f, nil
}

func newFieldInput() textinput.Model {
	ti := textinput.New()
	ti.Prompt = ""
	st := textinput.DefaultDarkStyles()
	st.Cursor.Blink = false
	ti.SetStyles(st)
	return ti
}

// setFocus moves the keys to field or button i, blurring the text field left.
func (f *form) setFocus(i int) {
	n := len(f.fields) + len(formButtons)
	i = (i%n + n) % n
	if f.focus < len(f.fields) && f.fields[f.focus].kind <= fieldInteger {
		f.fields[f.focus].input.Blur()
	}
	f.focus = i
	if i < len(f.fields) && f.fields[i].kind <= fieldInteger {
		f.fields[i].input.Focus()
	}
}

// move goes to the next (or previous) field or button, checking the field it leaves, so
// mistakes show as soon as the user moves on.
func (f *form) move(d int) {
	if f.focus < len(f.fields) {
		f.fields[f.focus].check()
	}
	f.setFocus(f.focus + d)
}

// answer sends res to the server; the form closes.
func (f *form) answer(res *mcp.ElicitResult) {
	f.reply <- res
	close(f.answered)
}

// submit checks every field and accepts with their values, or focuses the first field
// that is wrong.
func (f *form) submit() bool {
	first := -1
	content := map[string]any{}
	for i, fl := range f.fields {
		if !fl.check() && first < 0 {
			first = i
		}
		if v, ok, _ := fl.value(); ok {
			content[fl.name] = v
		}
	}
	if first >= 0 {
		f.err = "fix the fields marked ✗"
		f.setFocus(first)
		return false
	}
	if f.schema != nil {
		if err := f.schema.Validate(content); err != nil {
			f.err = schemaMessage(err)
			return false
		}
	}
	res := &mcp.ElicitResult{Action: "accept"}
	if !f.url {
		res.Content = content
	}
	f.answer(res)
	return true
}

// formGoneMsg says a form's request ended before the user answered it.
type formGoneMsg struct{ f *form }

// watch waits for the form's request to end unanswered; owned by the model, it ends with
// the answer or the program.
func (f *form) watch(done <-chan struct{}) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-f.ctx.Done():
			return formGoneMsg{f}
		case <-f.answered:
		case <-done:
		}
		return nil
	}
}

func (m *Model) waitElicit() tea.Cmd {
	if m.cfg.Elicitor == nil {
		return nil
	}
	reqs, done := m.cfg.Elicitor.reqs, m.done
	return func() tea.Msg {
		select {
		case f := <-reqs:
			return f
		case <-done:
			return nil
		}
	}
}

// formActive reports whether the keys go to the open form: one is queued and no picker or
// permission prompt is in front of it.
func (m *Model) formActive() bool {
	return len(m.forms) > 0 && m.picker == nil && len(m.asks) == 0
}

// closeForm drops f from the queue and notes the outcome in the transcript.
func (m *Model) closeForm(f *form, outcome string) {
	for i, g := range m.forms {
		if g == f {
			m.forms = append(m.forms[:i:i], m.forms[i+1:]...)
			m.notice(fmt.Sprintf("%s asked: %s — %s", f.server, firstLineOf(f.p.Message), outcome))
			return
		}
	}
}

// cancelForms answers every open form with cancel (the run was interrupted).
func (m *Model) cancelForms() {
	for len(m.forms) > 0 {
		f := m.forms[0]
		f.answer(&mcp.ElicitResult{Action: "cancel"})
		m.closeForm(f, "cancelled")
	}
}

// formKey handles a key while a form is open.
func (m *Model) formKey(msg tea.KeyPressMsg) tea.Cmd {
	f := m.forms[0]
	k := msg.String()
	var fl *formField
	if f.focus < len(f.fields) {
		fl = f.fields[f.focus]
	}
	button := f.focus - len(f.fields)
	switch k {
	case "esc":
		return m.formAction(f, "cancel")
	case "tab", "down":
		f.move(1)
		return nil
	case "shift+tab", "up":
		f.move(-1)
		return nil
	case "enter":
		if fl == nil {
			return m.formAction(f, formButtons[button])
		}
		if fl.kind == fieldMulti {
			fl.picked[fl.cursor] = !fl.picked[fl.cursor]
			return nil
		}
		f.move(1)
		return nil
	case "left", "right", "space":
		d := 1
		if k == "left" {
			d = -1
		}
		switch {
		case fl == nil && k == "space":
			return m.formAction(f, formButtons[button])
		case fl == nil:
			f.setFocus(len(f.fields) + (button+d+len(formButtons))%len(formButtons))
			return nil
		case fl.kind == fieldBool:
			fl.checked = !fl.checked
			return nil
		case fl.kind == fieldEnum && len(fl.options) > 0:
			if fl.choice < 0 && d < 0 {
				fl.choice = 0
			}
			fl.choice = (fl.choice + d + len(fl.options)) % len(fl.options)
			fl.err = ""
			return nil
		case fl.kind == fieldMulti && len(fl.options) > 0:
			if k == "space" {
				fl.picked[fl.cursor] = !fl.picked[fl.cursor]
				fl.err = ""
			} else {
				fl.cursor = (fl.cursor + d + len(fl.options)) % len(fl.options)
			}
			return nil
		}
	}
	if fl != nil && fl.kind <= fieldInteger {
		var cmd tea.Cmd
		fl.input, cmd = fl.input.Update(msg)
		fl.err = ""
		return cmd
	}
	return nil
}

// formAction runs a button: accept (if the fields are valid), decline or cancel.
func (m *Model) formAction(f *form, action string) tea.Cmd {
	switch action {
	case "accept":
		if !f.submit() {
			return nil
		}
		if f.url {
			m.closeForm(f, "opening "+f.p.URL)
			if m.cfg.OpenURL != nil {
				if err := m.cfg.OpenURL(f.p.URL); err != nil {
					m.errorf("open " + f.p.URL + ": " + err.Error())
				}
			}
			return nil
		}
		m.closeForm(f, "answered")
	case "decline":
		f.answer(&mcp.ElicitResult{Action: "decline"})
		m.closeForm(f, "declined")
	default:
		f.answer(&mcp.ElicitResult{Action: "cancel"})
		m.closeForm(f, "cancelled")
	}
	return nil
}

// formPaste puts pasted text into the focused text field.
func (m *Model) formPaste(text string) {
	f := m.forms[0]
	if f.focus < len(f.fields) && f.fields[f.focus].kind <= fieldInteger {
		fl := f.fields[f.focus]
		r, pos := []rune(fl.input.Value()), fl.input.Position()
		fl.input.SetValue(string(r[:pos]) + text + string(r[pos:]))
		fl.input.SetCursor(pos + len([]rune(text)))
		fl.err = ""
	}
}

// formLabelMax caps the label column, so long titles do not squeeze the inputs away.
const formLabelMax = 24

func labelWidth(fields []*formField) int {
	w := 0
	for _, fl := range fields {
		w = max(w, lipgloss.Width(fieldLabel(fl)))
	}
	return min(w, formLabelMax)
}

func fieldLabel(fl *formField) string {
	if fl.required {
		return fl.title + " *"
	}
	return fl.title
}
