package upstream

// Config returns the configuration in use, defaults filled in.
func (s *Sim) Config() SimConfig { return s.cfg }
