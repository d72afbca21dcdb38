package settings

// AutoMemoryOn reports whether the project's auto memory is on: it is unless a settings file
// says "autoMemoryEnabled": false.
func (s *Settings) AutoMemoryOn() bool {
	return !s.AutoMemoryEnabled.IsSet() || s.AutoMemoryEnabled.V
}
