#!/usr/bin/env python3
"""Writes the training corpus of the demo model: short children's stories made procedurally.

Every sentence comes from the templates and word lists in this file (written for EdgeLLM, no
third-party text). A story has a hero (a child or an animal with a trait), a place, a wish or a
problem, a helper, some dialogue, a turn of events and an ending with a small lesson; the parts
are drawn from a seeded random generator, so the same seed gives the same corpus byte for byte.

  python3 make_corpus.py --stories 20000 --seed 42 > corpus.txt

Stories are separated by blank lines.
"""
import argparse
import random

GIRLS = ["Lily", "Mia", "Sara", "Emma", "Zoe", "Anna", "Lucy", "Ella", "Rosa", "Nina", "Amy", "Kate",
         "Ivy", "Ruby", "Maya", "Lena", "Tara", "Jane", "Nora", "Daisy"]
BOYS = ["Tom", "Ben", "Max", "Sam", "Leo", "Jack", "Tim", "Finn", "Noah", "Alex", "Dan", "Ollie",
        "Ryan", "Jake", "Luke", "Theo", "Eli", "Omar", "Kai", "Hugo"]
ANIMALS = [("cat", "meow"), ("dog", "woof"), ("bunny", "squeak"), ("bird", "tweet"), ("fox", "yip"),
           ("bear", "growl"), ("duck", "quack"), ("frog", "ribbit"), ("mouse", "squeak"), ("owl", "hoot"),
           ("pig", "oink"), ("lamb", "baa"), ("turtle", "hum"), ("puppy", "woof"), ("kitten", "mew")]
ANIMAL_NAMES = ["Spot", "Fluffy", "Pip", "Bella", "Coco", "Sunny", "Milo", "Buddy", "Tiny", "Patch",
                "Honey", "Pebble", "Biscuit", "Rusty", "Misty"]
TRAITS = ["happy", "curious", "brave", "shy", "kind", "little", "clever", "funny", "gentle", "busy",
          "sleepy", "silly", "quiet", "friendly", "cheerful"]
PLACES = [("park", "in the park"), ("forest", "in the forest"), ("garden", "in the garden"),
          ("beach", "at the beach"), ("farm", "on the farm"), ("town", "in a small town"),
          ("house", "in a little house"), ("hill", "on a green hill"), ("pond", "near a big pond"),
          ("school", "at school"), ("meadow", "in a sunny meadow"), ("river", "by the river")]
OBJECTS = [("ball", "red"), ("kite", "blue"), ("hat", "yellow"), ("book", "old"), ("box", "small"),
           ("toy car", "shiny"), ("flower", "pretty"), ("cake", "sweet"), ("boat", "little"),
           ("key", "golden"), ("shell", "pink"), ("drum", "loud"), ("balloon", "green"),
           ("stone", "smooth"), ("cup", "white"), ("bell", "tiny"), ("blanket", "warm"),
           ("map", "big"), ("apple", "round"), ("star", "bright")]
WEATHER = ["The sun was shining.", "It was a warm day.", "The sky was blue.", "It was a windy day.",
           "It was raining a little.", "The morning was cold and bright.", "Birds were singing in the trees.",
           "The clouds were big and white."]
FEELINGS_BAD = ["sad", "worried", "scared", "upset", "lonely", "angry"]
FEELINGS_GOOD = ["happy", "glad", "proud", "excited", "thankful", "calm"]
HELPERS = ["mom", "dad", "grandma", "grandpa", "big sister", "big brother", "teacher", "friend"]
ACTIONS = ["play", "run", "jump", "sing", "dance", "read", "draw", "swim", "climb", "explore"]
ACTION_ING = {"play": "playing", "run": "running", "jump": "jumping", "sing": "singing", "dance": "dancing",
              "read": "reading", "draw": "drawing", "swim": "swimming", "climb": "climbing",
              "explore": "exploring"}
FOODS = ["cookies", "apples", "soup", "bread", "pie", "berries", "ice cream", "carrots", "honey", "milk"]
LESSONS = ["It is good to share.", "Friends help each other.", "Being kind makes everyone happy.",
           "It is okay to ask for help.", "Trying again is brave.", "Saying sorry makes things better.",
           "Listening is important.", "Small things can be big surprises.", "Home is where your friends are.",
           "Working together makes hard things easy."]
# Which LESSONS fit each plot (indices), so a story's lesson follows from what happened.
PLOT_LESSONS = {"lost": [1, 3, 9], "wish": [4, 3], "new_friend": [7, 8, 0], "storm": [1, 9],
                "share": [0, 2], "help": [1, 2, 9], "fear": [4, 1]}
ENDINGS = ["From that day on, {a} and {b} were best friends.", "{A} smiled and went home happy.",
           "That night, {a} slept with a big smile.", "And they played together until the sun went down.",
           "{A} never forgot that day.", "Everyone laughed and clapped.", "The end was happy for all of them.",
           "{A} hugged {b} and said thank you."]


class Character:
    def __init__(self, rng, kind=None):
        kind = kind or rng.choice(["girl", "boy", "animal", "animal"])
        self.kind = kind
        self.trait = rng.choice(TRAITS)
        if kind == "girl":
            self.name, self.noun, self.he, self.him, self.his = rng.choice(GIRLS), "girl", "she", "her", "her"
            self.sound = None
        elif kind == "boy":
            self.name, self.noun, self.he, self.him, self.his = rng.choice(BOYS), "boy", "he", "him", "his"
            self.sound = None
        else:
            animal, sound = rng.choice(ANIMALS)
            self.name, self.noun, self.sound = rng.choice(ANIMAL_NAMES), animal, sound
            self.he, self.him, self.his = rng.choice([("he", "him", "his"), ("she", "her", "her")])

    def intro(self, rng):
        article = "an" if self.trait[0] in "aeiou" else "a"
        return rng.choice([
            f"Once upon a time, there was {article} {self.trait} {self.noun} named {self.name}.",
            f"Once upon a time, there was {article} {self.trait} {self.noun}. {cap(self.his)} name was {self.name}.",
            f"One day, {article} {self.trait} {self.noun} named {self.name} woke up early.",
            f"There once was {article} {self.trait} {self.noun} called {self.name}.",
        ])


def cap(s):
    return s[:1].upper() + s[1:]


def say(rng, who, text, feeling=None):
    verb = rng.choice(["said", "said", "asked" if text.endswith("?") else "said", "shouted" if text.endswith("!") else "said",
                       "whispered"])
    if rng.random() < 0.5:
        quoted = text[:-1] + "," if text.endswith(".") else text
        return f"\"{quoted}\" {verb} {who}."
    return f"{who} {verb}, \"{text}\""


def story(rng):
    hero = Character(rng)
    friend = Character(rng)
    while friend.name == hero.name:
        friend = Character(rng)
    place_name, place = rng.choice(PLACES)
    obj, color = rng.choice(OBJECTS)
    action = rng.choice(ACTIONS)
    s = [hero.intro(rng)]
    if rng.random() < 0.5:
        s.append(rng.choice(WEATHER))
    s.append(rng.choice([
        f"{hero.name} lived {place} and loved to {action}.",
        f"{cap(hero.he)} liked to {action} {place} every day.",
        f"{hero.name} had a {color} {obj} that {hero.he} loved very much.",
        f"Every morning, {hero.name} went {ACTION_ING[action]} {place}.",
    ]))
    plot = rng.choice(["lost", "wish", "new_friend", "storm", "share", "help", "fear"])
    if plot == "lost":
        s.append(f"One day, {hero.name} was playing with {hero.his} {color} {obj} {place}.")
        s.append(rng.choice([f"But then the {obj} was gone!", f"Suddenly, {hero.he} could not find the {obj}.",
                             f"The wind took the {obj} far away."]))
        s.append(f"{hero.name} felt {rng.choice(FEELINGS_BAD)}.")
        s.append(say(rng, hero.name, rng.choice([f"Where is my {obj}?", f"I want my {obj} back!",
                                                 f"Can someone help me find my {obj}?"])))
        s.append(f"Then {hero.name} met {friend.name} the {friend.noun}.")
        s.append(say(rng, friend.name, rng.choice([f"Do not worry, I will help you look.", "Let's look together!",
                                                   f"I saw a {obj} under the tree."])))
        s.append(rng.choice([f"They looked under the bushes and behind the rocks.",
                             f"They walked and walked until they came to a big tree.",
                             f"They looked everywhere {place}."]))
        s.append(rng.choice([f"At last, {friend.name} found the {obj}!", f"There it was! The {color} {obj} was in the grass.",
                             f"{friend.name} saw something {color}. It was the {obj}!"]))
        s.append(f"{hero.name} was so {rng.choice(FEELINGS_GOOD)}.")
        s.append(say(rng, hero.name, rng.choice(["Thank you for helping me!", "You are a good friend!",
                                                 "I am so happy!"])))
    elif plot == "wish":
        s.append(f"{hero.name} wanted to {action} with the big kids, but {hero.he} was too small.")
        s.append(f"{cap(hero.he)} felt {rng.choice(FEELINGS_BAD)} and sat down {place}.")
        helper = rng.choice(HELPERS)
        s.append(f"{cap(hero.his)} {helper} came and sat next to {hero.him}.")
        s.append(say(rng, f"{cap(hero.his)} {helper}", rng.choice(["Why are you sad?", "What is wrong, my dear?",
                                                                   "Do you want to talk?"])))
        s.append(say(rng, hero.name, f"I want to {action}, but I cannot."))
        s.append(say(rng, f"{cap(hero.his)} {helper}", rng.choice(["You can try again tomorrow.",
                                                                   "Let's practice together.",
                                                                   "Everyone starts small."])))
        s.append(f"So they practiced every day {place}.")
        s.append(f"Soon {hero.name} could {action} very well.")
        s.append(f"The big kids said, \"Come and {action} with us!\"")
        s.append(f"{hero.name} felt {rng.choice(FEELINGS_GOOD)}.")
    elif plot == "new_friend":
        s.append(f"One day, {hero.name} saw a {friend.trait} {friend.noun} {place}.")
        if friend.sound:
            s.append(f"The {friend.noun} said, \"{cap(friend.sound)}!\"")
        s.append(say(rng, hero.name, rng.choice(["Hello! What is your name?", "Hi! Do you want to play?",
                                                 "Who are you?"])))
        s.append(say(rng, friend.name, rng.choice([f"My name is {friend.name}.", f"I am {friend.name}. I am new here.",
                                                   f"I am {friend.name}. Can I play with you?"])))
        s.append(f"{hero.name} showed {friend.name} {hero.his} {color} {obj}.")
        s.append(rng.choice([f"They played with the {obj} all day.", f"They took turns with the {obj}.",
                             f"They ran and laughed {place}."]))
        s.append(f"Later, they ate {rng.choice(FOODS)} together.")
    elif plot == "storm":
        s.append(f"{hero.name} and {friend.name} were {ACTION_ING[action]} {place}.")
        s.append(rng.choice(["Suddenly, dark clouds came and the wind blew hard.",
                             "Then it started to rain very hard.", "Then they heard a loud noise."]))
        s.append(f"{friend.name} was {rng.choice(['scared', 'worried'])}.")
        s.append(say(rng, friend.name, rng.choice(["What should we do?", "I am scared!", "Where can we go?"])))
        s.append(say(rng, hero.name, rng.choice(["Let's go to the house!", "Hold my hand, we will be fine.",
                                                 "Look, we can hide under that tree!"])))
        s.append("They ran together and found a safe place.")
        s.append(rng.choice(["Soon the rain stopped and the sun came out.", "After a while, the storm was over.",
                             "Then the sky was blue again."]))
        s.append(f"They saw a big rainbow in the sky. {friend.name} was not scared anymore.")
    elif plot == "share":
        food = rng.choice(FOODS)
        s.append(f"One day, {hero.name} had some {food}.")
        s.append(f"{friend.name} the {friend.noun} looked at the {food} and felt hungry.")
        s.append(say(rng, friend.name, f"Can I have some {food}, please?"))
        if rng.random() < 0.5:
            s.append(f"At first, {hero.name} did not want to share.")
            s.append(f"But then {hero.he} saw that {friend.name} was {rng.choice(FEELINGS_BAD)}.")
        s.append(say(rng, hero.name, rng.choice([f"Yes, let's share the {food}!", f"Here, you can have half.",
                                                 "Of course! Sharing is fun."])))
        s.append(f"They ate the {food} together {place}.")
        s.append(f"The {food} tasted even better when they shared.")
    elif plot == "help":
        s.append(f"One day, {hero.name} heard someone crying {place}.")
        s.append(f"It was {friend.name} the {friend.noun}.")
        problem = rng.choice([f"{friend.he} was stuck in the mud", f"{friend.his} {obj} was up in a tree",
                              f"{friend.he} could not find the way home"])
        s.append(f"Oh no, {problem}.")
        s.append(say(rng, hero.name, "Don't cry, I will help you!"))
        s.append(rng.choice([f"{hero.name} thought and thought. Then {hero.he} had an idea.",
                             f"{hero.name} asked {hero.his} {rng.choice(HELPERS)} for help.",
                             f"{hero.name} was {hero.trait}, and {hero.he} knew what to do."]))
        s.append(rng.choice(["They worked together, and soon everything was fine.",
                             "It was hard, but they did not give up.",
                             "Step by step, they fixed the problem."]))
        s.append(say(rng, friend.name, "Thank you! You are very kind."))
    else:  # fear
        dark = rng.choice(["the dark", "the big dog next door", "the deep water", "the loud thunder",
                           "the tall slide"])
        s.append(f"{hero.name} was afraid of {dark}.")
        s.append(f"One evening, {friend.name} came to visit.")
        s.append(say(rng, friend.name, f"Why are you afraid of {dark}?"))
        s.append(say(rng, hero.name, "I do not know. It just feels scary."))
        s.append(say(rng, friend.name, "Let's be brave together."))
        s.append(f"So they held hands and looked at {dark} together.")
        s.append(f"It was not so scary after all. {hero.name} laughed.")
    if rng.random() < 0.6:
        s.append(LESSONS[rng.choice(PLOT_LESSONS[plot])])
    a, b = hero.name, friend.name
    s.append(rng.choice(ENDINGS).format(a=a, b=b, A=a))
    return " ".join(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stories", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = [story(rng) for _ in range(args.stories)]
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
