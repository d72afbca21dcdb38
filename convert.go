package keel

import (
	"reflect"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/message"
)

// The public types are defined here, field for field as keel's internal ones, so that their
// documentation is the root package's own (an alias would show none of its fields). They
// are filled from the internal values by name (copyValue); events_test.go checks that both
// sides have the same fields, so one cannot grow without the other.

// publicEvents maps each internal event type to its public twin.
var publicEvents = lazy.Value[map[reflect.Type]reflect.Type]{New: func() map[reflect.Type]reflect.Type {
	return map[reflect.Type]reflect.Type{
		reflect.TypeFor[event.Init]():             reflect.TypeFor[Init](),
		reflect.TypeFor[event.TextDelta]():        reflect.TypeFor[TextDelta](),
		reflect.TypeFor[event.ThinkingDelta]():    reflect.TypeFor[ThinkingDelta](),
		reflect.TypeFor[event.ToolInputDelta]():   reflect.TypeFor[ToolInputDelta](),
		reflect.TypeFor[event.AssistantMessage](): reflect.TypeFor[AssistantMessage](),
		reflect.TypeFor[event.UserMessage]():      reflect.TypeFor[UserMessage](),
		reflect.TypeFor[event.ToolStart]():        reflect.TypeFor[ToolStart](),
		reflect.TypeFor[event.ToolProgress]():     reflect.TypeFor[ToolProgress](),
		reflect.TypeFor[event.ToolEnd]():          reflect.TypeFor[ToolEnd](),
		reflect.TypeFor[event.PermissionDenied](): reflect.TypeFor[PermissionDenied](),
		reflect.TypeFor[event.Retry]():            reflect.TypeFor[Retry](),
		reflect.TypeFor[event.CacheBreak]():       reflect.TypeFor[CacheBreak](),
		reflect.TypeFor[event.Compacted]():        reflect.TypeFor[Compacted](),
		reflect.TypeFor[event.Todos]():            reflect.TypeFor[Todos](),
		reflect.TypeFor[event.TaskStarted]():      reflect.TypeFor[TaskStarted](),
		reflect.TypeFor[event.TaskUpdated]():      reflect.TypeFor[TaskUpdated](),
		reflect.TypeFor[event.TaskProgress]():     reflect.TypeFor[TaskProgress](),
		reflect.TypeFor[event.TaskNotification](): reflect.TypeFor[TaskNotification](),
		reflect.TypeFor[event.Status]():           reflect.TypeFor[Status](),
		reflect.TypeFor[event.HookStarted]():      reflect.TypeFor[HookStarted](),
		reflect.TypeFor[event.HookResponse]():     reflect.TypeFor[HookResponse](),
		reflect.TypeFor[event.Notice]():           reflect.TypeFor[Notice](),
		reflect.TypeFor[event.Result]():           reflect.TypeFor[Result](),
		reflect.TypeFor[event.TeammateState]():    reflect.TypeFor[TeammateState](),
		reflect.TypeFor[event.TeamMessage]():      reflect.TypeFor[TeamMessage](),
		reflect.TypeFor[event.TeamMessageRead]():  reflect.TypeFor[TeamMessageRead](),
	}
}}

// publicEvent is the public form of a session's event; nil for one the API does not show.
func publicEvent(e event.Event) Event {
	pub, ok := publicEvents.Get()[reflect.TypeOf(e)]
	if !ok {
		return nil
	}
	out := reflect.New(pub).Elem()
	copyValue(out, reflect.ValueOf(e))
	return out.Interface().(Event)
}

// convert copies src into a new T by field name.
func convert[T any](src any) T {
	var out T
	copyValue(reflect.ValueOf(&out).Elem(), reflect.ValueOf(src))
	return out
}

// publicUsage is u as the API shows it.
func publicUsage(u message.Usage) Usage { return convert[Usage](u) }

// copyValue copies src into dst, which has the same shape under other type names: struct
// fields by name (dst's fields src lacks stay zero), slices, maps and pointers element by
// element, and values of one kind with different names (StopReason) by conversion.
func copyValue(dst, src reflect.Value) {
	switch {
	case !src.IsValid():
		return
	case src.Type().AssignableTo(dst.Type()):
		dst.Set(src)
		return
	}
	switch dst.Kind() {
	case reflect.Struct:
		for i := range dst.NumField() {
			f := dst.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if sf := src.FieldByName(f.Name); sf.IsValid() {
				copyValue(dst.Field(i), sf)
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			copyValue(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeMapWithSize(dst.Type(), src.Len()))
		for it := src.MapRange(); it.Next(); {
			v := reflect.New(dst.Type().Elem()).Elem()
			copyValue(v, it.Value())
			dst.SetMapIndex(it.Key().Convert(dst.Type().Key()), v)
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.New(dst.Type().Elem()))
		copyValue(dst.Elem(), src.Elem())
	default:
		if src.Type().ConvertibleTo(dst.Type()) {
			dst.Set(src.Convert(dst.Type()))
		}
	}
}
