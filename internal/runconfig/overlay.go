package runconfig

import "reflect"

// Overlay returns base with every field that over sets (a non-zero value) taken from over:
// how explicit options win over a configuration they start from. Nested sections are
// overlaid field by field; lists and pointers are taken whole.
func Overlay(base, over Config) Config {
	overlay(reflect.ValueOf(&base).Elem(), reflect.ValueOf(over))
	return base
}

func overlay(dst, src reflect.Value) {
	for i := range src.NumField() {
		s, d := src.Field(i), dst.Field(i)
		switch {
		case s.Kind() == reflect.Struct:
			overlay(d, s)
		case !s.IsZero():
			d.Set(s)
		}
	}
}
