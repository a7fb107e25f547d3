"""What metrics share: the Gemini judge questions and votes (judged, rubrics, safety_judge),
the Vertex AI evaluation client (vertex, vertex_metric) and token/call counting
(efficiency). Not metrics themselves: the registry scans only the modules of checker.metrics."""
