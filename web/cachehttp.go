package web

import (
	"net/http"

	"github.com/sluice-dev/sluice/cache"
)

// cacheOff answers every cache endpoint when the cache is disabled.
func cacheOff(w http.ResponseWriter) {
	writeError(w, notFound("the cache is disabled on this server"))
}

// cacheLookup is GET or POST /v1/cache/lookup: a dry run of the cache
// decision for a question, changing nothing.
func (s *Server) cacheLookup(w http.ResponseWriter, r *http.Request, tenant string) {
	if s.cache == nil {
		cacheOff(w)
		return
	}
	var in struct {
		Q         *string `json:"q"`
		Namespace string  `json:"namespace"`
		Model     string  `json:"model"`
	}
	if r.Method == http.MethodPost {
		if err := decodeJSON(w, r, s.cfg.MaxBody, &in); err != nil {
			writeError(w, err)
			return
		}
	} else {
		qs := r.URL.Query()
		if qs.Has("q") {
			q := qs.Get("q")
			in.Q = &q
		}
		in.Namespace, in.Model = qs.Get("namespace"), qs.Get("model")
	}
	if in.Q == nil || *in.Q == "" {
		writeError(w, badRequest("q (the question) is required"))
		return
	}
	if in.Namespace == "" {
		in.Namespace = "default"
	}
	if !cache.ValidNamespace(in.Namespace) {
		writeError(w, badRequest("namespace must match "+cache.NamespacePattern))
		return
	}
	if err := checkModel(in.Model); err != nil {
		writeError(w, err)
		return
	}
	if in.Model == "" {
		in.Model = s.orch.Config().DefaultModel
	}
	ns := cache.Namespace{Tenant: tenant, Namespace: in.Namespace, Model: in.Model}
	writeJSON(w, http.StatusOK, s.cache.Explain(r.Context(), ns, *in.Q))
}

// cacheStats is GET /v1/cache/stats: counters per effective namespace of
// the caller's tenant.
func (s *Server) cacheStats(w http.ResponseWriter, r *http.Request, tenant string) {
	if s.cache == nil {
		cacheOff(w)
		return
	}
	out := []cache.NamespaceStats{}
	for _, st := range s.cache.Stats() {
		if st.Tenant == tenant {
			out = append(out, st)
		}
	}
	s.writeAnswer(w, http.StatusOK, map[string]any{"namespaces": out, "threshold": s.cache.Threshold()})
}

// cachePurge is DELETE /v1/cache/namespaces/{namespace}: drop every entry
// of that namespace (all models) for the caller's tenant.
func (s *Server) cachePurge(w http.ResponseWriter, r *http.Request, tenant string) {
	if s.cache == nil {
		cacheOff(w)
		return
	}
	ns := r.PathValue("namespace")
	if !cache.ValidNamespace(ns) {
		writeError(w, badRequest("namespace must match "+cache.NamespacePattern))
		return
	}
	n := s.cache.Purge(tenant, ns)
	writeJSON(w, http.StatusOK, map[string]any{"namespace": ns, "deleted": n})
}
