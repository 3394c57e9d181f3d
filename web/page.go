package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var staticFS embed.FS

// pageHandler serves the embedded browser page: / is static/index.html,
// /static/... the assets.
func pageHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static") // the embedded folder exists
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			http.ServeFileFS(w, r, sub, "index.html")
			return
		}
		http.StripPrefix("/static", files).ServeHTTP(w, r)
	})
}
