package pluginhost

// Marker is what the host puts in its plugins' environment (BARRAGE_PLUGIN_HOST), which tells
// a test which processes are its host's.
func (h *Host) Marker() string { return h.marker }
