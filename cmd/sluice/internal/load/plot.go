package load

// The SVG plots of a load: hand-written, no plotting dependency.

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// series is one line of a chart.
type series struct {
	name  string
	color string
	pts   [][2]float64
}

// Plot draws the reports: with several runs, the latency percentiles
// (TTFT and total, p50 and p99, log scale) against the offered rate; with
// one, the requests in flight over time.
func Plot(reports []*Report) []byte {
	if len(reports) == 0 {
		return nil
	}
	first := reports[0]
	what := first.Endpoint
	if first.Target == TargetUpstream {
		what = "upstream (direct)"
	}
	if len(reports) == 1 {
		s := series{name: "in flight", color: "#1f77b4"}
		for _, p := range first.InflightSeries {
			s.pts = append(s.pts, [2]float64{p.T, float64(p.N)})
		}
		return chart(fmt.Sprintf("sluice load · %s · %g req/s: requests in flight", what, first.Rate),
			"seconds since the start", "in flight", false, []series{s})
	}
	lines := []series{
		{name: "TTFT p50", color: "#1f77b4"}, {name: "TTFT p99", color: "#aec7e8"},
		{name: "total p50", color: "#d62728"}, {name: "total p99", color: "#ff9896"},
	}
	for _, r := range reports {
		for i, v := range []float64{r.TTFT.P50, r.TTFT.P99, r.Total.P50, r.Total.P99} {
			if v > 0 {
				lines[i].pts = append(lines[i].pts, [2]float64{r.Rate, v})
			}
		}
	}
	return chart(fmt.Sprintf("sluice load · %s: latency against offered load", what),
		"offered load (requests per second)", "latency (ms, log scale)", true, lines)
}

// chart draws a line chart of 720×420 pixels.
func chart(title, xlabel, ylabel string, logY bool, lines []series) []byte {
	const w, h, left, right, top, bottom = 720.0, 420.0, 70.0, 150.0, 40.0, 50.0
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range lines {
		for _, p := range s.pts {
			xmin, xmax = min(xmin, p[0]), max(xmax, p[0])
			ymin, ymax = min(ymin, p[1]), max(ymax, p[1])
		}
	}
	if math.IsInf(xmin, 0) { // no points
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	if !logY {
		xmin, ymin = min(xmin, 0), 0
	}
	if logY {
		ymin = math.Pow(10, math.Floor(math.Log10(max(ymin, 0.01))))
		ymax = math.Pow(10, math.Ceil(math.Log10(max(ymax, ymin*10))))
	} else {
		ymax = niceCeil(max(ymax, 1))
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	px := func(x float64) float64 { return left + (x-xmin)/(xmax-xmin)*(w-left-right) }
	py := func(y float64) float64 {
		f := (y - ymin) / (ymax - ymin)
		if logY {
			f = (math.Log10(max(y, ymin)) - math.Log10(ymin)) / (math.Log10(ymax) - math.Log10(ymin))
		}
		return h - bottom - f*(h-top-bottom)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="14">%s</text>`+"\n", left, html.EscapeString(title))
	// Axes, ticks and grid.
	fmt.Fprintf(&b, `<path d="M%.1f %.1fV%.1fH%.1f" stroke="black" fill="none"/>`+"\n", left, top, h-bottom, w-right)
	var yticks []float64
	if logY {
		for y := ymin; y <= ymax*1.0001; y *= 10 {
			yticks = append(yticks, y)
		}
	} else {
		for i := range 6 {
			yticks = append(yticks, ymax*float64(i)/5)
		}
	}
	for _, y := range yticks {
		fmt.Fprintf(&b, `<path d="M%.1f %.1fH%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, py(y), w-right, left-6, py(y)+4, tick(y))
	}
	for i := range 6 {
		x := xmin + (xmax-xmin)*float64(i)/5
		fmt.Fprintf(&b, `<path d="M%.1f %.1fv5" stroke="black"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
			px(x), h-bottom, px(x), h-bottom+18, tick(x))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", left+(w-left-right)/2, h-12, html.EscapeString(xlabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+(h-top-bottom)/2, html.EscapeString(ylabel))
	// Lines, their points (when few) and the legend.
	for i, s := range lines {
		if len(s.pts) > 0 {
			var d strings.Builder
			for j, p := range s.pts {
				fmt.Fprintf(&d, "%s%.1f %.1f", map[bool]string{true: "M", false: "L"}[j == 0], px(p[0]), py(p[1]))
			}
			fmt.Fprintf(&b, `<path d="%s" stroke="%s" stroke-width="2" fill="none"/>`+"\n", d.String(), s.color)
			if len(s.pts) <= 20 {
				for _, p := range s.pts {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s</title></circle>`+"\n",
						px(p[0]), py(p[1]), s.color, html.EscapeString(s.name), tick(p[1]))
				}
			}
		}
		ly := top + 10 + float64(i)*18
		fmt.Fprintf(&b, `<path d="M%.1f %.1fh18" stroke="%s" stroke-width="3"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			w-right+12, ly, s.color, w-right+36, ly+4, html.EscapeString(s.name))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// tick prints an axis value briefly.
func tick(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}
