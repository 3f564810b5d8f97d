package deployments

// TEST FIXTURE, TO REPLACE AT THE MERGE WITH THE METRICS EXPORTER (branch h20-d).
//
// exportedMetricNames stands for metrics.Names() of package adapters/metrics:
// the metric families Concierge exports. Until that package is merged it
// returns a copy of the contract's table (metric names shared by the metrics
// work and the dashboards/alerts work). At the merge, delete this file's list
// and make exportedMetricNames return metrics.Names(), so that the dashboard
// and the alert rules are checked against what the exporter really
// registers.
func exportedMetricNames() []string {
	return []string{
		"concierge_http_requests_total",
		"concierge_http_request_duration_seconds",
		"concierge_chat_time_to_first_token_seconds",
		"concierge_chat_duration_seconds",
		"concierge_llm_requests_total",
		"concierge_llm_request_duration_seconds",
		"concierge_llm_tokens_total",
		"concierge_retrieval_duration_seconds",
		"concierge_retrieval_candidates",
		"concierge_fallbacks_total",
		"concierge_handoffs_total",
		"concierge_streams_open",
		"concierge_relay_lag_seconds",
		"concierge_relay_subscribers_cut_off_total",
		"concierge_inbound_events_total",
		"concierge_deliveries_total",
		"concierge_queue_tasks",
		"concierge_queue_latency_seconds",
		"concierge_db_connections",
		"concierge_redis_pool_connections",
		"concierge_retrieval_index_bytes",
		"concierge_ready",
	}
}
