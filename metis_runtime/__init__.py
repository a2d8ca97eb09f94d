"""metis_runtime: a real asyncio agent runtime that records an event-graph trace."""
