package fiscalsim

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
)

// consultaCFE is the query request. Untagged names match any namespace.
type consultaCFE struct {
	XMLName    xml.Name   `xml:"ConsultaCFE"`
	Encabezado encabezado `xml:"Encabezado"`
	Filtros    filtros    `xml:"Filtros"`
}

type filtros struct {
	TipoCFE  string `xml:"TipoCFE"`
	FechaIni string `xml:"FechaIni"`
	FechaFin string `xml:"FechaFin"`
	Items    []struct {
		CFENro           string `xml:"CFENro"`
		CFENumReferencia string `xml:"CFENumReferencia"`
	} `xml:"CFEsEspecificos>CFEsEspecificosItem"`
	NroIni string `xml:"CFEsFaixa>CFENroIni"`
	NroFin string `xml:"CFEsFaixa>CFENroFin"`
}

// specific names documents by reference and/or number; empty fields match
// anything.
type specific struct {
	reference string
	number    int
}

// filter is a validated Filtros: zero fields do not filter.
type filter struct {
	typ      int
	from, to string // YYYY-MM-DD, inclusive
	items    []specific
	// numbers bounds CFENro, inclusive (CFEsFaixa); zero: any number.
	numbers [2]int
}

// query serves aws_consultafactura.aspx: every document matching the
// Filtros, in issue order.
func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	s.count(func(st *Stats) { st.Queries++ })
	doc, ok := s.readRequest(w, r, "Xmlconsulta")
	if !ok {
		return
	}
	var req consultaCFE
	if err := xml.Unmarshal([]byte(doc), &req); err != nil {
		s.refuse(w, opQuery, "ConsultaCFERetorno", msgInvalid, "malformed ConsultaCFE")
		return
	}
	if !s.authentic(req.Encabezado, doc, "Filtros") {
		s.refuse(w, opQuery, "ConsultaCFERetorno", msgAuth, "invalid EmpCodigo, EmpPK or EmpCK")
		return
	}
	f, err := parseFilter(req.Filtros)
	if err != nil {
		s.refuse(w, opQuery, "ConsultaCFERetorno", msgInvalid, err.Error())
		return
	}
	_ = backoff.Sleep(r.Context(), s.queryLatency(f))
	found := s.find(f)
	s.log.Info("cfe query", zap.Int("specific", len(f.items)), zap.Int("found", len(found)))
	s.answer(w, opQuery, "ConsultaCFERetorno", msgOK, "OK", found)
}

// parseFilter validates Filtros. It needs specific items (CFENumReferencia
// and/or CFENro) or a full FechaIni–FechaFin period; items with both fields
// empty are ignored.
func parseFilter(in filtros) (filter, error) {
	var f filter
	if in.TipoCFE != "" {
		t, err := cfeType(in.TipoCFE)
		if err != nil {
			return filter{}, fmt.Errorf("TipoCFE: %w", err)
		}
		f.typ = t
	}
	for _, field := range [][2]string{{"FechaIni", in.FechaIni}, {"FechaFin", in.FechaFin}} {
		if _, err := time.Parse(dateLayout, field[1]); field[1] != "" && err != nil {
			return filter{}, fmt.Errorf("%s %q: want YYYY-MM-DD", field[0], field[1])
		}
	}
	f.from, f.to = in.FechaIni, in.FechaFin
	numbers, err := parseRange(in.NroIni, in.NroFin)
	if err != nil {
		return filter{}, err
	}
	f.numbers = numbers
	for _, it := range in.Items {
		if it.CFENumReferencia == "" && it.CFENro == "" {
			continue
		}
		sp := specific{reference: it.CFENumReferencia}
		if it.CFENro != "" {
			n, err := strconv.Atoi(it.CFENro)
			if err != nil {
				return filter{}, fmt.Errorf("CFENro %q: want a number", it.CFENro)
			}
			sp.number = n
		}
		f.items = append(f.items, sp)
	}
	if len(f.items) == 0 && (f.from == "" || f.to == "") {
		return filter{}, errors.New("Filtros: want CFEsEspecificos or FechaIni and FechaFin")
	}
	return f, nil
}

// parseRange reads CFEsFaixa: both bounds or neither, each a positive
// number, the first at most the second.
func parseRange(ini, fin string) ([2]int, error) {
	if ini == "" && fin == "" {
		return [2]int{}, nil
	}
	var r [2]int
	for i, field := range [][2]string{{"CFENroIni", ini}, {"CFENroFin", fin}} {
		n, err := strconv.Atoi(field[1])
		if err != nil || n < 1 {
			return [2]int{}, fmt.Errorf("CFEsFaixa %s %q: want a positive number", field[0], field[1])
		}
		r[i] = n
	}
	if r[0] > r[1] {
		return [2]int{}, fmt.Errorf("CFEsFaixa: CFENroIni %d is above CFENroFin %d", r[0], r[1])
	}
	return r, nil
}

// match reports whether d passes every filter and, if there are specific
// items, matches at least one.
func (f filter) match(d Document) bool {
	if (f.typ != 0 && d.Type != f.typ) || (f.from != "" && d.IssueDate < f.from) || (f.to != "" && d.IssueDate > f.to) ||
		(f.numbers[1] != 0 && (d.Number < f.numbers[0] || d.Number > f.numbers[1])) {
		return false
	}
	if len(f.items) == 0 {
		return true
	}
	for _, it := range f.items {
		if (it.reference == "" || it.reference == d.Reference) && (it.number == 0 || it.number == d.Number) {
			return true
		}
	}
	return false
}

// candidatesLocked returns the indices in docs of the documents f can
// match, in issue order: those under the references its items name, or,
// when it has an item without a reference (or none at all), those its
// number range, period or type selects (index.unnamed).
func (s *Server) candidatesLocked(f filter) []int {
	named := len(f.items) > 0
	var idx []int
	for _, it := range f.items {
		if it.reference == "" {
			named = false
			break
		}
		idx = append(idx, s.index.byRef[it.reference]...)
	}
	if !named {
		return s.index.unnamed(s.docs, f)
	}
	slices.Sort(idx)
	return slices.Compact(idx)
}

// reindexLocked moves the indices byKey and the index hold after docs was
// compacted: moved[i] is where document i went, -1 if it was dropped.
func (s *Server) reindexLocked(moved []int) {
	for k, i := range s.byKey {
		if moved[i] < 0 {
			delete(s.byKey, k)
		} else {
			s.byKey[k] = moved[i]
		}
	}
	s.index.rebuild(s.docs)
}

// find returns copies of the documents matching f, in issue order. Each
// one returned counts as a poll: a pending document whose polls are used up
// is authorized (and announced) before it is returned.
func (s *Server) find(f filter) []Document {
	s.mu.Lock()
	var out, changed []Document
	for _, i := range s.candidatesLocked(f) {
		d := &s.docs[i]
		if !f.match(*d) {
			continue
		}
		d.Polls++
		if d.Status == statusSentToDGI && d.pendingLeft > 0 {
			d.pendingLeft--
			if d.pendingLeft == 0 {
				d.Status = statusAuthorized
				changed = append(changed, d.clone())
			}
		}
		out = append(out, d.clone())
	}
	s.mu.Unlock()
	for _, d := range changed {
		s.hooks.statusChanged(d)
	}
	return out
}

// references returns the specific references f names.
func (f filter) references() []string {
	var refs []string
	for _, it := range f.items {
		if it.reference != "" {
			refs = append(refs, it.reference)
		}
	}
	return refs
}
