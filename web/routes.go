package web

// routes lists every endpoint. Follow a request from here.
func (s *Server) routes() {
	m := s.mux
	// Tasks (tasks.go).
	m.HandleFunc("POST /v1/tasks", s.authed(s.createTask))
	m.HandleFunc("POST /v1/stream", s.authed(s.streamTask))
	m.HandleFunc("GET /v1/tasks/{id}", s.authed(s.getTask))
	m.HandleFunc("DELETE /v1/tasks/{id}", s.authed(s.cancelTask))
	m.HandleFunc("GET /v1/tasks/{id}/events", s.taskEvents) // header key or events token

	// The OpenAI-compatible door (openai.go).
	m.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	m.HandleFunc("GET /v1/models", s.listModels)

	// The OpenAI Responses door (responses.go).
	m.HandleFunc("POST /v1/responses", s.createResponse)
	m.HandleFunc("GET /v1/responses/{id}", s.getResponse)
	m.HandleFunc("POST /v1/responses/{id}/cancel", s.cancelResponse)
	m.HandleFunc("DELETE /v1/responses/{id}", s.deleteResponse)

	// Cache (cachehttp.go).
	m.HandleFunc("GET /v1/cache/lookup", s.authed(s.cacheLookup))
	m.HandleFunc("POST /v1/cache/lookup", s.authed(s.cacheLookup))
	m.HandleFunc("GET /v1/cache/stats", s.authed(s.cacheStats))
	m.HandleFunc("DELETE /v1/cache/namespaces/{namespace}", s.authed(s.cachePurge))

	// Operations (ops.go).
	m.HandleFunc("GET /v1/budget", s.authed(s.budget))
	m.HandleFunc("GET /healthz", s.healthz)
	m.HandleFunc("GET /readyz", s.readyz)
	if s.cfg.Metrics != nil {
		m.Handle("GET /metrics", KeyedHandler(s.cfg.MetricsKey, s.cfg.Metrics))
	}

	// The browser page (page.go).
	m.Handle("GET /{$}", pageHandler())
	m.Handle("GET /static/", pageHandler())
}
