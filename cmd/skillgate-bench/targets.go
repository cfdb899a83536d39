package main

import (
	"fmt"
	"strings"
)

// writeTargets checks the targets against what was measured.
func (rep *compareReport) writeTargets(b *strings.Builder) {
	var rows [][3]string
	for _, pr := range rep.Points {
		pt := pr.Point
		switch {
		case pt.GatewayOnly:
			rows = append(rows, rep.listSkillsTarget(pr))
		case pt.Method == "_Keepalive" && pt.Size == 100:
			vc, vp := pr.ratio(pr.vsKind(kindCeiling)), pr.ratio(pr.bestPeer)
			rows = append(rows, [3]string{
				fmt.Sprintf("pipelined `_Keepalive`, %d conns: ≥ %.1f× ceiling, ≥ %.0f× best peer", pt.Conns, targetVsCeiling, targetVsPeer),
				fmt.Sprintf("%s ceiling, %s best peer", fmtRatio(vc), fmtRatio(vp)),
				met(vc >= targetVsCeiling && vp >= targetVsPeer),
			})
		}
	}
	for _, r := range rep.Idle {
		if r.Res == nil || r.Res.Conns < targetIdlePoint || r.Res.Conns > targetIdlePoint {
			continue
		}
		limit, tr := float64(targetIdleTCP), "plain TCP"
		if r.TLS {
			limit, tr = float64(targetIdleTLS), "TLS"
		}
		got := r.Res.perConn(r.Res.Before, r.Res.After)
		rows = append(rows, [3]string{
			fmt.Sprintf("%d idle initialized %s connections: ≤ %s RSS each", targetIdlePoint, tr, fmtKiB(limit)),
			fmtKiB(got), met(got <= limit && r.Res.Failed == 0 && r.Res.Dead == 0),
		})
	}
	if rep.RunCode != nil {
		rows = append(rows, rep.RunCode.target())
	}
	if rep.Sustained != nil {
		rows = append(rows, rep.Sustained.targets()...)
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "### Targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	b.WriteString("\n")
}

func (rep *compareReport) listSkillsTarget(pr *pointResult) [3]string {
	name := fmt.Sprintf("`%s %s`, %d conns: ≥ %.1f× the ceiling's `_Keepalive`", pr.Point.Method, pr.Point.Params, pr.Point.Conns, targetListSkills)
	if servedNone(pr) {
		return [3]string{name, "not served by this gateway build (" + pr.errorsOf(kindGateway) + ")", "n/a"}
	}
	r := rep.listSkillsRatio(pr)
	return [3]string{name, fmtRatio(r), met(r >= targetListSkills)}
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
