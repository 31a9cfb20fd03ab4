package report

import (
	"strings"
	"unicode/utf8"
)

// Table is a Markdown table.
type Table struct {
	Header []string
	Rows   [][]string
	Right  []bool // right-align column i (numbers)
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// String renders t as GitHub Markdown, columns padded for reading as text.
func (t *Table) String() string {
	w := make([]int, len(t.Header))
	for i, h := range t.Header {
		w[i] = max(3, utf8.RuneCountInString(h))
	}
	for _, r := range t.Rows {
		for i := range w {
			if i < len(r) {
				w[i] = max(w[i], utf8.RuneCountInString(escape(r[i])))
			}
		}
	}
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("|")
		for i := range w {
			c := ""
			if i < len(cells) {
				c = escape(cells[i])
			}
			b.WriteString(" ")
			if i < len(t.Right) && t.Right[i] {
				b.WriteString(strings.Repeat(" ", w[i]-utf8.RuneCountInString(c)) + c)
			} else {
				b.WriteString(c + strings.Repeat(" ", w[i]-utf8.RuneCountInString(c)))
			}
			b.WriteString(" |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|")
	for i := range w {
		if i < len(t.Right) && t.Right[i] {
			b.WriteString(" " + strings.Repeat("-", w[i]-1) + ": |")
		} else {
			b.WriteString(" " + strings.Repeat("-", w[i]) + " |")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	return b.String()
}

func escape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// CodeBlock fences text.
func CodeBlock(text string) string {
	return "```\n" + strings.TrimRight(text, "\n") + "\n```\n"
}
