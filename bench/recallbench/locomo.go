package recallbench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// locomoCategories names LoCoMo's categories (bench/README.md). Category 5
// is adversarial: scored on its own, outside the overall figure.
func locomoCategories() map[string]string {
	return map[string]string{
		"1": "multi-hop",
		"2": "temporal",
		"3": "open-domain",
		"4": "single-hop",
		"5": "adversarial",
	}
}

// locomoDateLayout is the layout of session_N_date_time, e.g.
// "1:56 pm on 8 May, 2023".
const locomoDateLayout = "3:04 pm on 2 January, 2006"

type locomoSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []locomoQA                 `json:"qa"`
}

type locomoTurn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
}

type locomoQA struct {
	Question string   `json:"question"`
	Evidence []string `json:"evidence"`
	Category int      `json:"category"`
}

// LoCoMoStats counts what the conversion dropped.
type LoCoMoStats struct {
	Questions        int // questions in the file
	DroppedEvidence  int // evidence ids that match no turn
	SkippedQuestions int // questions left without gold
}

// ReadLoCoMo converts LoCoMo (locomo10.json) to a Dataset in memory: a
// group per conversation, a document per turn with the text
// "(<session date>) <speaker>: <text>" and " [image: <caption>]" when the
// turn shares an image; each turn of a session is a second later than the
// one before. Evidence ids are normalised as bench/README.md says.
func ReadLoCoMo(r io.Reader) (*Dataset, LoCoMoStats, error) {
	var st LoCoMoStats
	var samples []locomoSample
	if err := json.NewDecoder(r).Decode(&samples); err != nil {
		return nil, st, fmt.Errorf("read locomo: %w", err)
	}
	ds := &Dataset{
		Name:       "locomo10",
		Separate:   []string{"5"},
		Categories: locomoCategories(),
		References: []Reference{{
			Label: "DRAGON (LoCoMo paper, Table 3)",
			All:   map[int]float64{5: 0.567, 10: 0.662, 25: 0.767, 50: 0.827},
			Recall10: map[string]float64{
				"1": 0.466, "2": 0.773, "3": 0.408, "4": 0.777,
			},
		}},
	}
	seen := map[string]bool{}
	for i, s := range samples {
		if s.SampleID == "" {
			return nil, st, fmt.Errorf("read locomo: sample %d has no sample_id", i)
		}
		if seen[s.SampleID] {
			return nil, st, fmt.Errorf("read locomo: duplicate sample_id %q", s.SampleID)
		}
		seen[s.SampleID] = true
		g, err := locomoGroup(s, &st)
		if err != nil {
			return nil, st, fmt.Errorf("read locomo: %s: %w", s.SampleID, err)
		}
		ds.Groups = append(ds.Groups, g)
	}
	if len(ds.Groups) == 0 {
		return nil, st, fmt.Errorf("read locomo: no conversations")
	}
	return ds, st, nil
}

func locomoGroup(s locomoSample, st *LoCoMoStats) (*Group, error) {
	g := &Group{ID: s.SampleID}
	var sessions []int
	for k := range s.Conversation {
		if n, ok := sessionNumber(k); ok {
			sessions = append(sessions, n)
		}
	}
	slices.Sort(sessions)
	ids := map[string]bool{}
	for _, n := range sessions {
		key := "session_" + strconv.Itoa(n)
		var when string
		raw, ok := s.Conversation[key+"_date_time"]
		if !ok {
			return nil, fmt.Errorf("%s has no %s_date_time", key, key)
		}
		if err := json.Unmarshal(raw, &when); err != nil {
			return nil, fmt.Errorf("%s_date_time: %w", key, err)
		}
		start, err := time.Parse(locomoDateLayout, strings.TrimSpace(when))
		if err != nil {
			return nil, fmt.Errorf("%s_date_time: %w", key, err)
		}
		var turns []locomoTurn
		if err := json.Unmarshal(s.Conversation[key], &turns); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		for i, t := range turns {
			id, ok := normEvidence(t.DiaID)
			if !ok {
				return nil, fmt.Errorf("%s turn %d: bad dia_id %q", key, i, t.DiaID)
			}
			if ids[id] {
				return nil, fmt.Errorf("%s: duplicate dia_id %q", key, t.DiaID)
			}
			ids[id] = true
			text := "(" + when + ") " + t.Speaker + ": " + t.Text
			if c := strings.TrimSpace(t.BlipCaption); c != "" {
				text += " [image: " + c + "]"
			}
			g.Docs = append(g.Docs, Doc{
				ID:      id,
				Text:    text,
				TS:      start.Add(time.Duration(i) * time.Second),
				Speaker: t.Speaker,
				Session: strconv.Itoa(n),
			})
		}
	}
	for i, qa := range s.QA {
		st.Questions++
		var gold []string
		for _, ev := range qa.Evidence {
			for _, part := range strings.FieldsFunc(ev, evidenceSep) {
				id, ok := normEvidence(part)
				if !ok || !ids[id] {
					st.DroppedEvidence++
					continue
				}
				if !slices.Contains(gold, id) {
					gold = append(gold, id)
				}
			}
		}
		if len(gold) == 0 {
			st.SkippedQuestions++
			continue
		}
		g.Queries = append(g.Queries, Query{
			ID:       "q" + strconv.Itoa(i+1),
			Text:     qa.Question,
			Relevant: gold,
			Category: strconv.Itoa(qa.Category),
		})
	}
	return g, nil
}

// sessionNumber returns N for a key "session_N".
func sessionNumber(key string) (int, bool) {
	rest, ok := strings.CutPrefix(key, "session_")
	if !ok {
		return 0, false
	}
	return atoi(rest)
}

// evidenceSep reports whether r separates evidence ids ("D8:6; D9:17",
// "D9:1 D4:4").
func evidenceSep(r rune) bool {
	return r == ';' || r == ',' || unicode.IsSpace(r)
}

// normEvidence normalises a LoCoMo turn id: "D:11:26" → "D11:26",
// "D30:05" → "D30:5".
func normEvidence(s string) (string, bool) {
	rest, ok := strings.CutPrefix(s, "D")
	if !ok {
		return "", false
	}
	rest = strings.TrimPrefix(rest, ":")
	a, b, ok := strings.Cut(rest, ":")
	if !ok {
		return "", false
	}
	sess, ok1 := atoi(a)
	turn, ok2 := atoi(b)
	if !ok1 || !ok2 {
		return "", false
	}
	return "D" + strconv.Itoa(sess) + ":" + strconv.Itoa(turn), true
}

// atoi parses a non-empty string of ASCII digits.
func atoi(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
