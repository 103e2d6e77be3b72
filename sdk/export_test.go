package sdk

// ValidatePlugin is Serve's check of a plugin, for tests.
func ValidatePlugin(p *Plugin) error { return p.validate() }
