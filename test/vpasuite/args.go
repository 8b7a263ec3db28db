package main

// withoutRecommender is the --recommender-name the manager runs with for the suites that the
// VPA runs without its recommender: no VerticalPodAutoscaler names it, so the manager
// recommends for none of them (the specs write the recommendations they need into the VPAs'
// status themselves), as a cluster running the VPA's updater and admission controller beside
// another recommender.
const withoutRecommender = "vpasuite-none"

// managerArgs are the manager's flags for suite: its VPA controllers (the verticalscaler group),
// and the recommender only where the VPA's hack/deploy-for-e2e.sh deploys its own.
func managerArgs(suite, kubeconfig, probes string) []string {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=verticalscaler",
		"--health-probe-bind-address=" + probes,
		"--metrics-bind-address=0",
		// The runner registers a stand-in of the VPA admission controller's webhook
		// (webhookStandIn), which the manager would otherwise take for the VPA's own and idle.
		"--vpa-detect-components=false",
	}
	switch suite {
	case "recommender", "full-vpa":
	default:
		args = append(args, "--recommender-name="+withoutRecommender)
	}
	return args
}
