// Package voice will hold realtime speech at the desk: PortAudio capture and
// playback, the realtime WebSocket session opened directly to the provider
// with an ephemeral credential minted by hearth (xAI and OpenAI dialects),
// VAD settings, and the bridge that sends finished transcripts to hearth.
// Audio never crosses the hearth socket.
package voice
