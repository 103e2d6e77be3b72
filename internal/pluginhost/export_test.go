package pluginhost

// Marker is what the host puts in its plugins' environment (BARRAGE_PLUGIN_HOST), which tells
// a test which processes are its host's.
func (h *Host) Marker() string { return h.marker }

// OwnCgroupDirs lists the folders of this process's own cgroups in the v1 hierarchies of the
// controllers plugins use, one per hierarchy.
func OwnCgroupDirs() ([]string, error) {
	mounts, err := readCgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range mounts {
		if !m.v2 {
			dirs = append(dirs, m.inMount(own[m.controllers[0]]))
		}
	}
	return dirs, nil
}
