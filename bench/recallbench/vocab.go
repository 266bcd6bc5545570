package recallbench

import "strings"

// vocabulary returns the synthetic journal's words, most frequent first: a
// head of common English chat words (function words, then everyday
// nouns, verbs and adjectives), then a long tail of made-up names, places
// and rare words built from syllables, as real journals have (names,
// typos, jargon). Zipf sampling over the ranks gives realistic term
// statistics for BM25; the head words are in the word-vector model, the
// tail words are not.
func vocabulary() []string {
	head := strings.Fields(`
i you the to a and it that is of in my for it's was me have on so just
but be this we with not do what like are at i'm can know your about all
if yeah get out think no one really go up oh too how there so good time
would when they been lol don't now will had some more did he she going
him her them then her how well because got see want much here right also
day people back make love thing thanks great work need new today still
okay sure even way should could did never feel last first little from
yes always let an by our their why which who where any long today tomorrow
night week weekend morning evening year month family friend friends home
school job kids mom dad sister brother wife husband dog cat house car
food coffee dinner lunch breakfast movie music book game trip city beach
park phone money help fun happy sad tired busy excited glad sorry nice
cool awesome pretty big small old young hard easy best better worse bad
made went came said told felt looked started tried found took gave kept
play watch read write cook walk run drive talk call text meet visit
travel move buy pay learn teach paint draw sing dance swim hike bake
garden clean sleep eat drink rest relax enjoy share remember forget plan
hope wish try finish start stop wait miss lose win change open close
place room kitchen office store restaurant hospital church library gym
class team club group party wedding birthday holiday vacation concert
festival show event project meeting interview exam test lesson course
doctor teacher nurse boss neighbor kid baby child children parents
picture photo video song album story letter card gift present surprise
summer winter spring fall rain snow sun weather mountain lake river sea
forest camping road bike train plane flight hotel ticket passport
painting pottery guitar piano violin drums yoga running marathon race
soccer basketball tennis football chess puzzle recipe cake cookies pizza
salad soup pasta bread chocolate tea wine beer water fruit apple garden
flowers tree plant dogs cats puppy kitten horse bird fish pet pets
support community volunteer charity shelter adoption career business
startup company client market sale price budget rent loan bank bills
health therapy anxiety stress workout diet sleep doctor medicine
feeling proud grateful nervous worried calm confident curious lonely
beautiful amazing wonderful lovely perfect special important different
favorite interesting funny crazy weird quiet loud warm cold hot sunny
yesterday tonight recently soon later early late ago before after during
monday tuesday wednesday thursday friday saturday sunday january february
march april may june july august september october november december
`)
	syll := strings.Fields(`ka lo mi ren tor sa vel un bri ash cor dan el fin gar hal
ith jo kel lim mar nor os pen quin ros sel tam ul var wen yor zel ber cam dor`)
	seen := map[string]bool{}
	var words []string
	for _, w := range head {
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	// Two- and three-syllable words: 34² + 34³ ≈ 40,000 rare words.
	for _, a := range syll {
		for _, b := range syll {
			words = append(words, a+b)
		}
	}
	for _, a := range syll {
		for _, b := range syll {
			for _, c := range syll {
				words = append(words, a+b+c)
			}
		}
	}
	return words
}
