package event

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

// Encode writes e as JSON tagged with its type, so that [Decode] makes it again in another
// process: a teammate on another host streams its events to its lead this way.
func Encode(e Event) ([]byte, error) {
	name := reflect.TypeOf(e).Name()
	if _, ok := kinds()[name]; !ok {
		return nil, fmt.Errorf("encode event: %T is not an event type of package event", e)
	}
	return json.Marshal(envelope{Type: name, Event: e})
}

// Decode reads an event [Encode] wrote. An unknown type is an error (a newer keel's event).
func Decode(data []byte) (Event, error) {
	var env struct {
		Type  string          `json:"type"`
		Event json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	typ, ok := kinds()[env.Type]
	if !ok {
		return nil, fmt.Errorf("decode event: unknown type %q", env.Type)
	}
	v := reflect.New(typ)
	if err := json.Unmarshal(env.Event, v.Interface()); err != nil {
		return nil, fmt.Errorf("decode event %s: %w", env.Type, err)
	}
	return v.Elem().Interface().(Event), nil
}

type envelope struct {
	Type  string `json:"type"`
	Event Event  `json:"event"`
}

// kinds names every event type, for Decode; a test checks it lists each one of this package.
// It is built on first use: a table built at init would be paid by every keel start (this
// package is a leaf, so it keeps its own sync.Once rather than importing internal/lazy).
func kinds() map[string]reflect.Type {
	kindTable.once.Do(func() {
		kindTable.m = typeTable(Init{}, TextDelta{}, ThinkingDelta{}, AssistantMessage{}, UserMessage{}, ToolStart{}, ToolProgress{},
			ToolEnd{}, PermissionDenied{}, Retry{}, CacheBreak{}, Compacted{}, Todos{}, TaskStarted{}, TaskUpdated{}, TaskProgress{},
			TaskNotification{}, Status{}, HookStarted{}, HookResponse{}, Notice{}, Result{}, TeammateState{}, TeamMessage{},
			TeamMessageRead{}, ToolInputDelta{})
	})
	return kindTable.m
}

var kindTable struct {
	once sync.Once
	m    map[string]reflect.Type
}

func typeTable(evs ...Event) map[string]reflect.Type {
	m := make(map[string]reflect.Type, len(evs))
	for _, e := range evs {
		t := reflect.TypeOf(e)
		m[t.Name()] = t
	}
	return m
}
