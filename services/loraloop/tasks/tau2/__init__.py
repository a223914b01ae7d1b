"""tau2-bench's customer-service tasks (airline, retail, telecom, mock), frozen in snapshots."""
