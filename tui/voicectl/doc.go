// Package voicectl is the desk: it runs one realtime voice session for a
// client. It asks hearth for a credential at every (re)connect, opens the
// audio streams, and pumps between them: microphone frames to the
// session, reply audio to the speaker, barge-in when the user speaks over
// the agent, one finished transcript per item to hearth, and the tools the
// model calls run by hearth. Audio never crosses the hearth socket.
//
// What it needs from hearth and from the sound card are interfaces of its
// own (Hearth, Audio); Link implements Hearth over the client's protocol
// connection. The UI learns what happens from Next and reads levels with
// Levels; nothing the desk does waits on the UI.
package voicectl
