package metrics

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteMarkdown writes Describe as a Markdown table: the generated part
// of docs/metrics.md, which TestMetricsMarkdown checks (and -update
// rewrites).
func WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| Metric | Type | Labels | Help |\n|---|---|---|---|\n")
	for _, d := range Describe() {
		labels := "—"
		if len(d.Labels) > 0 {
			labels = "`" + strings.Join(d.Labels, "`, `") + "`"
		}
		help := d.Help
		if d.Scraped {
			help += " *(read at scrape time)*"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, d.Type, labels, strings.ReplaceAll(help, "|", "\\|"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Describe returns the documentation of every sluice_ metric, sorted by
// name. The Go runtime (go_*), process (process_*) and promhttp_* metrics
// of the registry are not listed.
func Describe() []MetricDoc {
	out := make([]MetricDoc, len(catalog))
	for i, d := range catalog {
		d.Labels = slices.Clone(d.Labels)
		d.Buckets = slices.Clone(d.Buckets)
		out[i] = d
	}
	slices.SortFunc(out, func(a, b MetricDoc) int { return strings.Compare(a.Name, b.Name) })
	return out
}
