"""Word lists and sentence templates for the sample corpus, one entry per category.

Templates use ``str.format`` fields. A field named after a slot with a trailing digit
(``{ingredient2}``) draws again from the same slot, and the generator keeps the draws distinct.
``openers`` make the first sentence of ``text`` and ``followups`` an optional second one;
``headlines[i]`` is the title of a text that starts with ``openers[i]``, and uses only that
opener's fields. Within one row a field keeps its word, so a title names the very dish,
telescope or player its text is about (full-text search for a word of a title finds the
text). Everything here is our own writing.
"""

from __future__ import annotations

from typing import TypedDict


class Topic(TypedDict):
    slots: dict[str, tuple[str, ...]]
    headlines: tuple[str, ...]  # one per opener, in the same order
    openers: tuple[str, ...]
    followups: tuple[str, ...]


TOPICS: dict[str, Topic] = {
    "cooking": {
        "slots": {
            "dish": (
                "sourdough loaf", "mushroom risotto", "vegetable lasagne", "banana bread",
                "chicken curry", "red lentil soup", "pad thai", "apple pie", "pork ramen",
                "seafood paella", "rosemary focaccia", "ratatouille", "chocolate brownies",
                "beef stew", "shakshuka", "buttermilk pancakes", "potato gnocchi", "carrot cake",
            ),
            "ingredient": (
                "garlic", "fresh basil", "smoked paprika", "brown butter", "flaky sea salt",
                "lemon zest", "grated ginger", "fresh thyme", "parmesan", "extra virgin olive oil",
                "toasted cumin", "cinnamon", "white miso", "chili flakes", "crème fraîche",
                "roasted shallots", "coriander leaves", "dark brown sugar",
            ),
            "technique": (
                "slow roasting", "braising", "proofing the dough overnight", "searing the meat",
                "caramelising onions", "blind baking the crust", "deglazing the pan",
                "tempering chocolate", "folding in egg whites", "toasting whole spices",
            ),
            "tool": (
                "cast-iron skillet", "dutch oven", "stand mixer", "sharp chef's knife",
                "baking stone", "pressure cooker", "digital kitchen scale", "food processor",
            ),
            "minutes": ("five", "ten", "fifteen", "twenty", "thirty", "forty-five"),
            "temp": ("180", "200", "220", "250"),
        },
        "headlines": (
            "{dish} with {ingredient} and {ingredient2}",
            "Let the {dish} rest for {minutes} minutes",
            "{technique} with a {tool}",
            "Grandmother's {dish}: {ingredient}, not {ingredient2}",
            "Baking {dish} at {temp} degrees",
            "{technique} for a great {dish}",
            "Season the {dish} with {ingredient} last",
            "Sourdough starter and dough with {ingredient}",
            "A {minutes}-minute sauce with {ingredient}",
            "Six versions of {dish}: {ingredient} wins",
            "Knead the dough for {minutes} minutes",
        ),
        "openers": (
            "This {dish} gets its depth from {ingredient} and a pinch of {ingredient2}.",
            "Let the {dish} rest for {minutes} minutes before slicing so it holds together.",
            "A {tool} makes {technique} much easier when you cook at home.",
            "My grandmother's {dish} recipe calls for {ingredient} instead of {ingredient2}.",
            "Preheat the oven to {temp} degrees and bake the {dish} until golden on top.",
            "{technique} is the secret to a great {dish}.",
            "Season the {dish} with {ingredient} at the very end, not at the start.",
            "Feed the sourdough starter the night before, then mix the dough with {ingredient}.",
            "Simmer the sauce for {minutes} minutes and stir in {ingredient} just before serving.",
            "We tested six versions of {dish} and the one with {ingredient} won every time.",
            "Knead the dough for {minutes} minutes, until it is smooth and springs back.",
        ),
        "followups": (
            "Serve it warm with a crisp green salad.",
            "It keeps for three days in the fridge.",
            "Leftovers freeze well for up to a month.",
            "Taste and adjust the salt before serving.",
            "Kids love it, and it costs very little to make.",
            "A squeeze of lemon brightens the whole plate.",
            "Use a {tool} if you have one.",
            "The recipe doubles easily for a dinner party.",
        ),
    },
    "astronomy": {
        "slots": {
            "object": (
                "the Andromeda galaxy", "Saturn's rings", "the Orion nebula", "Jupiter's moons",
                "the Pleiades cluster", "a distant quasar", "the red giant Betelgeuse",
                "the Crab nebula", "a passing comet", "the lunar craters", "Mars at opposition",
                "the Milky Way core", "a binary star system", "the Ring nebula",
            ),
            "instrument": (
                "telescope", "small refractor", "Dobsonian telescope", "pair of binoculars",
                "radio telescope", "space telescope", "spectrograph", "cooled CCD camera",
            ),
            "event": (
                "total solar eclipse", "Perseid meteor shower", "lunar eclipse",
                "transit of Mercury", "conjunction of Venus and Jupiter", "supernova outburst",
                "Geminid meteor shower", "northern lights display",
            ),
            "concept": (
                "dark matter", "redshift", "stellar nucleosynthesis", "gravitational lensing",
                "the cosmic microwave background", "black hole accretion", "exoplanet transits",
                "the expansion of the universe", "neutron star mergers",
            ),
            "time": ("just after midnight", "before dawn", "at dusk", "on a moonless night"),
        },
        "headlines": (
            "{object} through a {instrument} {time}",
            "The {event} over Europe",
            "A {instrument} on {concept} in {object}",
            "{concept} and the light of {object}",
            "Finding {object} with a {instrument} {time}",
            "New measurements of {concept}",
            "The {event} in a {instrument}",
            "A long exposure of {object}",
            "Tracing a new exoplanet's orbit",
            "How {concept} shaped the early universe",
        ),
        "openers": (
            "Through a {instrument} you can see {object} {time} if the sky is dark enough.",
            "The {event} will be visible from most of Europe this year.",
            "Astronomers used a {instrument} to study {concept} in {object}.",
            "{concept} explains why light from {object} looks the way it does.",
            "Point your {instrument} low in the east {time} to find {object}.",
            "New measurements of {concept} suggest the galaxy is older than we thought.",
            "Amateur observers caught the {event} with nothing more than a {instrument}.",
            "A long exposure of {object} reveals faint structure invisible to the eye.",
            "The orbit of the new exoplanet was traced through repeated transits of its star.",
            "Cosmologists still argue about how {concept} shaped the early universe.",
        ),
        "followups": (
            "Let your eyes adapt to the dark for twenty minutes first.",
            "Light pollution from cities hides most faint stars.",
            "A star chart or planetarium app helps you find it.",
            "The next chance to see it will not come for years.",
            "Clear skies and steady air make all the difference.",
            "Data from the observatory will be public next spring.",
            "Even a modest {instrument} shows the planets clearly.",
        ),
    },
    "football": {
        "slots": {
            "team": (
                "the home side", "the visitors", "the league leaders", "the newly promoted club",
                "the defending champions", "the under-21 squad", "the national team",
                "the relegation candidates", "the women's team", "the cup holders",
            ),
            "player": (
                "the striker", "the young winger", "the veteran goalkeeper", "the captain",
                "the holding midfielder", "the left back", "the substitute forward",
                "the centre half", "the playmaker",
            ),
            "action": (
                "scored a header from a corner", "curled a free kick into the top corner",
                "converted a late penalty", "saved a penalty in stoppage time",
                "was sent off for a second yellow card", "hit the crossbar twice",
                "completed a hat-trick", "cleared the ball off the goal line",
                "set up the equaliser with a low cross",
            ),
            "goal": (
                "scored a header from a corner", "curled a free kick into the top corner",
                "converted a late penalty", "completed a hat-trick",
                "finished a fine team move", "lobbed the goalkeeper from thirty yards",
            ),
            "competition": (
                "the league", "the cup semi-final", "the derby", "the Champions League",
                "the World Cup qualifier", "the title race", "the final", "the group stage",
            ),
            "score": ("1-0", "2-1", "3-2", "4-1", "3-0", "2-0"),
            "draw": ("0-0", "1-1", "2-2", "3-3"),
            "minute": ("12th", "38th", "55th", "71st", "88th", "90th"),
        },
        "headlines": (
            "{player} {goal} in the {minute} minute",
            "{team} draw {draw} in {competition}",
            "The manager praises {player}, who {action}",
            "{team} press high all match",
            "{player} {action} in {competition}",
            "VAR check in the {minute} minute",
            "{team} sign {player} on a four-year contract",
            "A {score} result keeps {team} top",
            "{team} win {competition} on penalties",
            "A back three for {team}",
        ),
        "openers": (
            "{player} {goal} in the {minute} minute to give {team} a {score} win.",
            "{team} drew {draw} in {competition} after a tense second half.",
            "The manager praised {player}, who {action} before half-time.",
            "{team} pressed high all match and the midfield never gave the ball away.",
            "In {competition}, {player} {action} and the stadium erupted.",
            "The referee checked VAR before awarding the goal in the {minute} minute.",
            "{team} signed {player} from a rival club on a four-year contract.",
            "A {score} result keeps {team} top of the table with five games left.",
            "Fans sang for ninety minutes as {team} won {competition} on penalties.",
            "The coach switched to a back three and {team} finally found space on the wings.",
        ),
        "followups": (
            "The club confirmed the injury will keep him out for a month.",
            "Next weekend they travel to face their biggest rivals.",
            "The away fans stayed long after the final whistle.",
            "Possession was even, but the chances told a different story.",
            "The goalkeeper made three fine saves in the first half.",
            "Ticket sales for the next home match have already sold out.",
        ),
    },
    "programming": {
        "slots": {
            "language": (
                "Python", "Rust", "Go", "TypeScript", "Java", "C++", "Kotlin", "SQL", "Haskell",
            ),
            "tool": (
                "the debugger", "a profiler", "unit tests", "the type checker", "a linter",
                "continuous integration", "git bisect", "a code review", "the compiler",
            ),
            "concept": (
                "recursion", "memory leaks", "race conditions", "dependency injection",
                "immutable data structures", "async functions", "garbage collection",
                "database indexes", "regular expressions", "hash maps", "closures",
                "error handling", "API versioning",
            ),
            "bug": (
                "an off-by-one error", "a null pointer exception", "a deadlock",
                "a flaky test", "a stack overflow", "an integer overflow",
                "a slow database query", "a memory leak",
            ),
            "artifact": (
                "the function", "the module", "the class", "the REST endpoint",
                "the build script", "the parser", "the query", "the command-line tool",
            ),
        },
        "headlines": (
            "Tracking {bug} in {artifact} with {tool}",
            "{concept} in {language} for a testable {artifact}",
            "Refactor {artifact} before adding {concept}",
            "{tool} catches {bug} in {artifact}",
            "Rewriting {artifact} in {language}",
            "Learning {concept} in {language}",
            "{concept} for {artifact} and a test for {bug}",
            "{tool} and compiler warnings against {bug}",
            "A failing unit test first, then {artifact}",
            "A {language} service and {bug} under load",
        ),
        "openers": (
            "We tracked down {bug} in {artifact} using {tool}.",
            "In {language}, {concept} can make {artifact} far easier to test.",
            "Refactor {artifact} into smaller functions before adding {concept}.",
            "{tool} caught {bug} that had been hiding in {artifact} for months.",
            "Rewriting {artifact} in {language} cut the response time in half.",
            "Beginners often struggle with {concept} when they first learn {language}.",
            "The pull request adds {concept} to {artifact} and a test for {bug}.",
            "Compile with warnings enabled and {tool} will point at {bug} early.",
            "Write a failing unit test first, then change {artifact} until it passes.",
            "Our {language} service crashed because of {bug} under heavy load.",
        ),
        "followups": (
            "Always run the full test suite before you merge.",
            "Readable variable names save hours of debugging later.",
            "The fix was a single line, but finding it took two days.",
            "Document the edge cases in the function's docstring.",
            "Benchmark before and after so you know the change helped.",
            "Keep commits small so reviewers can follow them.",
            "Use {tool} on every commit to catch it sooner.",
        ),
    },
    "gardening": {
        "slots": {
            "plant": (
                "tomatoes", "climbing roses", "lavender", "runner beans", "courgettes",
                "tulip bulbs", "basil seedlings", "strawberries", "hydrangeas", "sunflowers",
                "garlic cloves", "dahlias", "apple trees", "potatoes", "sweet peas",
            ),
            "task": (
                "prune", "mulch", "water", "repot", "deadhead", "stake", "plant out",
                "divide", "feed",
            ),
            "soil": (
                "well-drained soil", "heavy clay", "rich compost", "sandy soil",
                "leaf mould", "acidic soil", "a raised bed",
            ),
            "pest": ("slugs", "aphids", "vine weevils", "blackfly", "caterpillars", "snails"),
            "season": ("early spring", "late autumn", "midsummer", "the first frost", "winter"),
        },
        "headlines": (
            "{task} the {plant} in {season}",
            "{plant} in {soil}",
            "{pest} against {plant}: copper tape",
            "{soil} around the {plant}",
            "Sowing {plant} indoors in {season}",
            "{plant} in flower: how to {task} them",
            "Marigolds keep {pest} off the {plant}",
            "Turning the compost heap",
            "{plant} with yellow leaves",
            "Saving seeds from {plant}",
        ),
        "openers": (
            "{task} the {plant} in {season} and they will reward you all year.",
            "Plant {plant} in {soil} with plenty of sun and room to spread.",
            "{pest} stripped the {plant} overnight, so I put copper tape around the bed.",
            "Add a thick layer of {soil} around the {plant} to keep moisture in.",
            "Sow {plant} indoors in {season} and harden them off before planting out.",
            "Our {plant} flowered for months after we started to {task} them properly.",
            "Marigolds between the {plant} help keep {pest} away without chemicals.",
            "The compost heap needs turning every few weeks to break down properly.",
            "If your {plant} have yellow leaves, check whether the soil is waterlogged.",
            "Save seeds from the best {plant} and store them somewhere cool and dry.",
        ),
        "followups": (
            "Water in the morning so the leaves dry before night.",
            "Bees and butterflies will visit all summer.",
            "A cold frame protects young plants from late frost.",
            "Rotate crops each year to keep the soil healthy.",
            "Check under the leaves for {pest} every few days.",
            "Homegrown produce tastes far better than anything from the shop.",
        ),
    },
    "music": {
        "slots": {
            "instrument": (
                "piano", "acoustic guitar", "violin", "drum kit", "cello", "saxophone",
                "electric bass", "trumpet", "ukulele", "synthesizer",
            ),
            "genre": (
                "jazz", "baroque", "blues", "folk", "hip-hop", "indie rock", "soul",
                "electronic", "bossa nova", "punk",
            ),
            "element": (
                "chord progression", "melody", "rhythm section", "guitar solo", "bass line",
                "vocal harmony", "string arrangement", "drum groove", "chorus",
            ),
            "venue": (
                "a small jazz club", "the concert hall", "a summer festival", "the local pub",
                "an open-air stage", "a packed arena",
            ),
            "skill": (
                "scales", "sight-reading", "ear training", "fingerpicking", "improvisation",
                "music theory", "breath control",
            ),
        },
        "headlines": (
            "The {element} and {element2} of a new {genre} album",
            "{skill} on the {instrument}, daily",
            "The band at {venue}: the {element}",
            "Learning the {instrument} by ear",
            "A minor-key {element}",
            "Where {genre} grew up",
            "The {instrument} opens the symphony",
            "The {instrument} part in one take",
            "Choir practice: {skill} at {venue}",
            "A {genre} trio: {instrument} and {instrument2}",
        ),
        "openers": (
            "The {element} on the new {genre} album builds slowly to a huge {element2}.",
            "Practise {skill} on the {instrument} for twenty minutes every day.",
            "The band played {venue} and the {element} had everyone dancing.",
            "She learned the {instrument} by ear before she could read sheet music.",
            "A simple {element} in a minor key gives the song its melancholy mood.",
            "{genre} grew out of the clubs and record shops of a few big cities.",
            "The orchestra tuned up, and the {instrument} opened the symphony alone.",
            "He recorded the {instrument} part in one take at a tiny home studio.",
            "Our choir rehearses {skill} before every concert at {venue}.",
            "The {genre} trio swapped solos on {instrument} and {instrument2} all night.",
        ),
        "followups": (
            "The audience called them back for two encores.",
            "A metronome keeps your timing honest.",
            "The vinyl pressing sounds warmer than the stream.",
            "Tickets for the tour sold out within an hour.",
            "Listen for the key change in the final verse.",
            "Record yourself and listen back to hear what to fix.",
        ),
    },
    "travel": {
        "slots": {
            "place": (
                "Lisbon", "Kyoto", "the Scottish Highlands", "Patagonia", "Marrakech",
                "the Amalfi coast", "Iceland", "Vietnam", "the Norwegian fjords", "Istanbul",
                "New Zealand", "the Alps", "Crete", "Mexico City", "the Canadian Rockies",
            ),
            "transport": (
                "night train", "ferry", "rental car", "budget flight", "cable car",
                "long-distance bus", "sleeper train", "local bus",
            ),
            "stay": (
                "a family guesthouse", "a mountain hut", "a budget hostel",
                "a seaside campsite", "a boutique hotel", "a rented apartment",
            ),
            "tip": (
                "book early", "pack light", "carry some cash", "learn a few local phrases",
                "travel in the shoulder season", "buy a rail pass", "get travel insurance",
            ),
            "sight": (
                "the old town", "the harbour at sunset", "the cathedral", "the night market",
                "the national park", "a remote waterfall", "the castle ruins",
            ),
        },
        "headlines": (
            "By {transport} to {place}, a stay in {stay}",
            "{place}: {sight} before the crowds",
            "{place}: {tip}",
            "The {transport} journey to {place}",
            "Border checks on the way to {place}",
            "{stay} near {sight}",
            "From {place} by {transport} to the coast",
            "Seasoned travellers in {place}",
            "The hike to {sight} in {place}",
            "A delayed flight and the airport lounge",
        ),
        "openers": (
            "We took the {transport} to {place} and stayed in {stay}.",
            "In {place}, wander through {sight} early before the tour groups arrive.",
            "If you visit {place}, {tip} and you will save a lot of money.",
            "The {transport} journey to {place} has some of the best views in the world.",
            "Our passport was checked twice at the border before we reached {place}.",
            "Book {stay} near {sight} so you can explore on foot.",
            "After three days in {place} we took the {transport} and headed for the coast.",
            "Seasoned travellers in {place} always {tip}.",
            "The hike to {sight} in {place} takes about four hours each way.",
            "Our flight was delayed, so we spent the layover exploring the airport lounge.",
        ),
        "followups": (
            "Pack a rain jacket whatever the forecast says.",
            "Street food is cheap, delicious and safe if the stall is busy.",
            "Check the visa rules well before you go.",
            "Locals were friendly and happy to give directions.",
            "Bring a power adapter and a spare phone charger.",
            "We already want to go back next summer.",
            "Remember to {tip} before the trip.",
        ),
    },
    "finance": {
        "slots": {
            "asset": (
                "index funds", "government bonds", "dividend stocks", "a savings account",
                "real estate", "a pension fund", "exchange-traded funds", "cash reserves",
            ),
            "metric": (
                "inflation", "interest rates", "the price-to-earnings ratio", "bond yields",
                "the unemployment rate", "quarterly earnings", "the exchange rate",
            ),
            "actor": (
                "central bankers", "investors", "economists", "small businesses",
                "first-time buyers", "pension savers", "analysts",
            ),
            "advice": (
                "diversify your portfolio", "build an emergency fund", "pay off credit card debt",
                "automate your savings", "keep fees low", "rebalance once a year",
                "track your monthly budget",
            ),
            "percent": ("0.5", "1.5", "2", "3.2", "4", "5.5", "7"),
        },
        "headlines": (
            "Rates up {percent} percent: {actor} notice",
            "Before buying {asset}: {advice}",
            "Rising {metric}: {asset} less attractive to {actor}",
            "{advice}, then invest in {asset}",
            "Stocks fall {percent} percent as {metric} surprises {actor}",
            "{asset}: {percent} percent a year over twenty years",
            "Compound interest: {advice} early",
            "{actor} expect {metric} to stay high",
            "{metric} and mortgage payments",
            "{advice} before investing in {asset}",
        ),
        "openers": (
            "The central bank raised interest rates by {percent} percent, and {actor} noticed.",
            "Before buying {asset}, {advice} and check the fees.",
            "A rise in {metric} made {asset} less attractive to {actor} this quarter.",
            "A simple rule: {advice} and invest the rest in {asset}.",
            "The stock market fell {percent} percent after {metric} surprised {actor}.",
            "Over twenty years, {asset} returned about {percent} percent a year after fees.",
            "Compound interest rewards people who {advice} early in their careers.",
            "{actor} expect {metric} to stay high until the end of the year.",
            "Mortgage payments jumped when {metric} rose, squeezing household budgets.",
            "Financial planners say: {advice} before you invest in {asset}.",
        ),
        "followups": (
            "Past performance is no guarantee of future returns.",
            "Tax rules differ, so ask an adviser about your own case.",
            "Keep at least three months of expenses in cash.",
            "Markets recovered most of the losses within a week.",
            "Fees quietly eat a large share of long-term gains.",
            "Analysts expect more volatility next quarter.",
        ),
    },
}
