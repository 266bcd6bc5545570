// Package voice is realtime speech at the desk: the WebSocket session
// opened directly to the provider (xAI or OpenAI GA) with an ephemeral
// credential minted by hearth, its connect procedure, VAD settings, typed
// events, barge-in and resumption. Audio devices (PortAudio) and the bridge
// that sends finished transcripts to hearth build on it; audio never
// crosses the hearth socket.
//
// The package holds domain values only: it does not import ipc. The client
// converts hearth's voice_credential into a Credential and Settings.
package voice
