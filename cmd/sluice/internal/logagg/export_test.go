package logagg

// Flush ends every window now, emitting the pending summaries.
func (a *Handler) Flush() { a.st.flush(true) }
