package report

import "testing"

func TestTable(t *testing.T) {
	tb := &Table{Header: []string{"name", "n"}, Right: []bool{false, true}}
	tb.Add("a|b", "1")
	tb.Add("long name", "12345")
	want := "| name      |     n |\n" +
		"| --------- | ----: |\n" +
		"| a\\|b      |     1 |\n" +
		"| long name | 12345 |\n"
	if got := tb.String(); got != want {
		t.Errorf("Table:\n%s\nwant:\n%s", got, want)
	}
}

func TestTableRunes(t *testing.T) {
	tb := &Table{Header: []string{"gap"}}
	tb.Add("200µs")
	want := "| gap   |\n| ----- |\n| 200µs |\n"
	if got := tb.String(); got != want {
		t.Errorf("Table:\n%s\nwant:\n%s", got, want)
	}
}
