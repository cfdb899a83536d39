package deploy_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The dashboard's data source is a variable, so that one JSON imports into
// any Grafana.
const dashboardDatasource = "${datasource}"

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *dsRef `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr       string `json:"expr"`
		RefID      string `json:"refId"`
		Datasource *dsRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

type templateVar struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Query      any    `json:"query"`
	Definition string `json:"definition"`
	Datasource *dsRef `json:"datasource"`
}

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []templateVar `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name       string `json:"name"`
			Expr       string `json:"expr"`
			Datasource *dsRef `json:"datasource"`
		} `json:"list"`
	} `json:"annotations"`
	Panels []panel `json:"panels"`
}

func loadDashboard(t testing.TB) dashboard {
	t.Helper()
	var d dashboard
	require.NoError(t, json.Unmarshal([]byte(readFile(t, dashboardPath)), &d))
	return d
}

// allPanels flattens rows.
func (d dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// dashboardExprs maps "panel title/refId" (and annotations and variables)
// to their PromQL.
func dashboardExprs(t testing.TB, d dashboard) map[string]string {
	out := map[string]string{}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out[p.Title+"/"+tg.RefID] = tg.Expr
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			out["annotation "+a.Name] = a.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			out["variable "+v.Name] = v.Definition
		}
	}
	return out
}

func TestDashboardStructure(t *testing.T) {
	d := loadDashboard(t)
	assert.NotEmpty(t, d.UID)
	assert.NotEmpty(t, d.Title)
	hasDS := slices.ContainsFunc(d.Templating.List, func(v templateVar) bool {
		return v.Type == "datasource" && v.Name == "datasource" && v.Query == "prometheus"
	})
	assert.True(t, hasDS, "a Prometheus data source variable named datasource")
	ids := map[int]bool{}
	for _, p := range d.allPanels() {
		assert.False(t, ids[p.ID], "duplicate panel id %d", p.ID)
		ids[p.ID] = true
		g := p.GridPos
		assert.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24, "panel %q gridPos %+v", p.Title, g)
		if p.Type == "row" {
			continue
		}
		assert.Equal(t, &dsRef{"prometheus", dashboardDatasource}, p.Datasource, "panel %q", p.Title)
		assert.NotEmpty(t, p.Targets, "panel %q", p.Title)
		for _, tg := range p.Targets {
			assert.NotEmpty(t, tg.Expr, "panel %q %s", p.Title, tg.RefID)
			assert.Equal(t, &dsRef{"prometheus", dashboardDatasource}, tg.Datasource, "panel %q %s", p.Title, tg.RefID)
		}
	}
	assert.Empty(t, overlaps(d.allPanels()), "panels overlap")
}

// overlaps lists pairs of panels that cover the same grid cell.
func overlaps(panels []panel) []string {
	owner := map[[2]int]string{}
	var out []string
	for _, p := range panels {
		for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
			for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
				if o, ok := owner[[2]int{x, y}]; ok {
					out = append(out, fmt.Sprintf("%q and %q", o, p.Title))
					continue
				}
				owner[[2]int{x, y}] = p.Title
			}
		}
	}
	return slices.Compact(out)
}

// TestDashboardShowsEveryMetric: each skillgate_* metric of metrics.New,
// and the gauges the binary adds (queue, workers, blob store, skills), has
// a panel.
func TestDashboardShowsEveryMetric(t *testing.T) {
	used := map[string]bool{}
	for _, expr := range dashboardExprs(t, loadDashboard(t)) {
		for _, m := range metricRefRE.FindAllStringSubmatch(expr, -1) {
			used[histogramBase(m[1])] = true
		}
	}
	want := append([]string{
		"skillgate_sandbox_queue_depth", "skillgate_sandbox_workers", "skillgate_sandbox_running",
		"skillgate_blobstore_blobs", "skillgate_blobstore_bytes", "skillgate_blobstore_quota_bytes", "skillgate_skills_loaded",
		"skillgate_sandbox_templates", "skillgate_sandbox_template_bytes",
	}, collectorMetrics()...)
	want = slices.DeleteFunc(want, func(name string) bool { return !strings.HasPrefix(name, "skillgate_") })
	var missing []string
	for _, name := range want {
		if !used[name] {
			missing = append(missing, name)
		}
	}
	assert.Empty(t, missing, "metrics without a panel in %s", dashboardPath)
	assert.True(t, strings.Contains(readFile(t, dashboardPath), "histogram_quantile"), "latency quantiles")
}
