package report

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func TestPercentilePlot(t *testing.T) {
	h := hdrhistogram.New(1, 1e8, 3)
	for i := int64(1); i <= 10000; i++ {
		h.RecordValue(100 + i%1000) // 0.1 .. 1.1 ms
	}
	h.RecordValue(50000)
	s := SeriesFromHist("a <&> b", h)
	if len(s.Points) == 0 || s.Points[len(s.Points)-1].Ms < 49.9 || s.Points[len(s.Points)-1].Ms > 50.1 {
		t.Fatalf("series ends at %+v, want the 50 ms max last", s.Points[len(s.Points)-1])
	}
	svg := PercentilePlot("title", []Series{s, {Name: "empty"}})
	d := xml.NewDecoder(strings.NewReader(svg))
	polylines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("invalid SVG: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if polylines != 1 {
		t.Errorf("got %d polylines, want 1 (the empty series draws none)", polylines)
	}
	for _, label := range []string{"99.9%", "90%", "10 ms", "a &lt;&amp;&gt; b"} {
		if !strings.Contains(svg, label) {
			t.Errorf("SVG lacks %q", label)
		}
	}
}

func TestNinesLabel(t *testing.T) {
	for i, want := range []string{"0%", "90%", "99%", "99.9%", "99.99%"} {
		if got := ninesLabel(i); got != want {
			t.Errorf("ninesLabel(%d) = %s, want %s", i, got, want)
		}
	}
}

func TestTimelinePlot(t *testing.T) {
	svg := TimelinePlot("t <1>", []TimeSeries{{Name: "a", Points: []Point2{{0.05, 0.3}, {0.15, 12}, {0.25, 0.4}}}, {Name: "empty"}})
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("invalid SVG: %v", err)
	}
	if !strings.Contains(svg, "<polyline") || !strings.Contains(svg, "t &lt;1&gt;") {
		t.Errorf("SVG lacks the curve or the escaped title")
	}
}
