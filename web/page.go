package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var staticFS embed.FS

// pageCSP keeps the page self-contained: no external scripts, styles,
// fonts or connections (it works offline), and no inline script.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// pageHandler serves the embedded browser page: / is static/index.html,
// /static/... the assets (index.html, app.js and its modules, style.css).
func pageHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static") // the embedded folder exists
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", pageCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Embedded files carry no modification time: have browsers
		// revalidate so a new binary's page is picked up at once.
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/" {
			http.ServeFileFS(w, r, sub, "index.html")
			return
		}
		name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/static"), "/")
		if st, err := fs.Stat(sub, name); name != "" && (err != nil || st.IsDir()) {
			writeError(w, notFound("no such file: "+r.URL.Path)) // JSON, like every unknown path
			return
		}
		http.StripPrefix("/static", files).ServeHTTP(w, r)
	})
}
