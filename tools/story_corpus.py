"""Writes the English corpus the embedded models are trained on: short children's stories
generated from a grammar (characters, places, objects, feelings, actions and dialogue), so the
corpus is ours to redistribute with the models trained on it (no licence attaches to it).

    python3 tools/story_corpus.py OUT_DIR [--stories 40000] [--seed 7]

writes OUT_DIR/train.txt and OUT_DIR/heldout.txt (one story per line; the held-out stories use
the same grammar but other random draws). Deterministic for a seed.
"""
import argparse, os, random

NAMES = {
    'girl': ['Lily', 'Mia', 'Emma', 'Sara', 'Anna', 'Lucy', 'Zoe', 'Ella', 'Rosa', 'Nina', 'Ruby', 'Amy'],
    'boy': ['Tom', 'Ben', 'Max', 'Sam', 'Leo', 'Jack', 'Tim', 'Finn', 'Noah', 'Owen', 'Luke', 'Joe'],
}
ANIMALS = ['cat', 'dog', 'bird', 'rabbit', 'fox', 'bear', 'duck', 'frog', 'mouse', 'owl', 'turtle', 'horse']
ANIMAL_NAMES = ['Spot', 'Fluffy', 'Pip', 'Coco', 'Bubbles', 'Sunny', 'Whiskers', 'Rusty', 'Daisy', 'Bo']
ADJ_KID = ['little', 'happy', 'curious', 'kind', 'brave', 'shy', 'clever', 'cheerful']
ADJ_ANIMAL = ['small', 'fluffy', 'friendly', 'sleepy', 'playful', 'tiny', 'old', 'funny']
PLACES = [
    ('a small house', 'near the forest'), ('a big farm', 'by the river'), ('a cozy cottage', 'on a hill'),
    ('a blue house', 'next to the park'), ('a tall tower', 'in the town'), ('a little hut', 'by the sea'),
]
OUTSIDE = ['the park', 'the garden', 'the forest', 'the beach', 'the meadow', 'the river', 'the hill', 'the market']
OBJECTS = [
    ('ball', ['red', 'shiny', 'bouncy', 'big']), ('kite', ['yellow', 'long', 'colorful']),
    ('box', ['wooden', 'secret', 'heavy']), ('flower', ['pink', 'pretty', 'tall']),
    ('book', ['old', 'magic', 'thick']), ('hat', ['green', 'funny', 'warm']),
    ('key', ['golden', 'tiny', 'shiny']), ('shell', ['white', 'smooth', 'pretty']),
    ('cake', ['sweet', 'chocolate', 'round']), ('boat', ['toy', 'blue', 'little']),
    ('stone', ['round', 'sparkly', 'smooth']), ('map', ['old', 'torn', 'secret']),
]
FEELINGS_GOOD = ['happy', 'excited', 'glad', 'proud', 'surprised']
FEELINGS_BAD = ['sad', 'worried', 'scared', 'upset', 'tired']
WEATHER = ['It was a sunny day.', 'The sky was blue and clear.', 'It was a windy morning.',
           'The rain had stopped.', 'It was a warm afternoon.', 'Snow covered the ground.']
PROBLEMS = [
    ('the {obj} was stuck in a tree', 'climbed the tree', 'got the {obj} down'),
    ('the {obj} fell into the river', 'used a long stick', 'pulled the {obj} out of the water'),
    ('the {obj} was lost', 'looked everywhere', 'found the {obj} behind a rock'),
    ('the {obj} was broken', 'asked Mom for help', 'fixed the {obj} with some glue'),
    ('a big dog took the {obj}', 'ran after the dog', 'got the {obj} back'),
    ('the wind blew the {obj} away', 'ran as fast as they could', 'caught the {obj}'),
]
ENDINGS = [
    '{a} and {b} played together until the sun went down.',
    'From that day on, {a} and {b} were best friends.',
    'They went home and told Mom all about their day.',
    '{a} smiled and said, "This is the best day ever!"',
    'That night, {a} went to bed with a happy heart.',
    '{a} learned that it is good to help your friends.',
    'They shared the {obj} and laughed together.',
]
OPENINGS = ['Once upon a time', 'One day', 'Long ago', 'Once', 'One morning']

def pron(kind):
    return {'girl': ('she', 'her', 'her'), 'boy': ('he', 'him', 'his'), 'animal': ('it', 'it', 'its')}[kind]

def cap(s):
    return s[0].upper() + s[1:]

def story(r):
    kind = r.choice(['girl', 'boy'])
    hero = r.choice(NAMES[kind])
    he, him, his = pron(kind)
    friend_kind = r.choice(['girl', 'boy', 'animal'])
    if friend_kind == 'animal':
        animal = r.choice(ANIMALS)
        friend = r.choice(ANIMAL_NAMES)
        friend_intro = f'{hero} had a {r.choice(ADJ_ANIMAL)} {animal} named {friend}.'
    else:
        friend = r.choice([n for n in NAMES[friend_kind] if n != hero])
        friend_intro = f'{cap(his)} best friend was a {r.choice(ADJ_KID)} {friend_kind} named {friend}.'
    obj, adjs = r.choice(OBJECTS)
    adj = r.choice(adjs)
    home, where = r.choice(PLACES)
    place = r.choice(OUTSIDE)
    s = []
    s.append(f'{r.choice(OPENINGS)}, there was a {r.choice(ADJ_KID)} {kind} named {hero}.')
    s.append(f'{cap(he)} lived in {home} {where}.')
    s.append(friend_intro)
    if r.random() < 0.6:
        s.append(r.choice(WEATHER))
    s.append(f'{hero} and {friend} went to {place} to play.')
    s.append(f'There, {hero} found a {adj} {obj}.')
    s.append(f'"Look, {friend}!" said {hero}. "What a {adj} {obj}!"')
    s.append(f'{hero} was very {r.choice(FEELINGS_GOOD)}.')
    prob, act, fix = r.choice(PROBLEMS)
    s.append(f'But then {prob.format(obj=obj)}.')
    s.append(f'{hero} felt {r.choice(FEELINGS_BAD)}. "Oh no!" {he} said.')
    helper = r.choice([hero, friend])
    s.append(f'"Do not worry," said {friend if helper == friend else hero}. "I can help."')
    s.append(f'{helper} {act} and {fix.format(obj=obj)}.')
    if r.random() < 0.5:
        s.append(f'"Thank you, {friend}!" said {hero}.' if helper == friend else f'"You did it, {hero}!" said {friend}.')
    s.append(r.choice(ENDINGS).format(a=hero, b=friend, obj=obj))
    return ' '.join(s)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('--stories', type=int, default=40000)
    ap.add_argument('--heldout', type=int, default=500)
    ap.add_argument('--seed', type=int, default=7)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    r = random.Random(a.seed)
    with open(os.path.join(a.out, 'train.txt'), 'w') as f:
        for _ in range(a.stories):
            f.write(story(r) + '\n')
    r = random.Random(a.seed + 1_000_003)
    with open(os.path.join(a.out, 'heldout.txt'), 'w') as f:
        for _ in range(a.heldout):
            f.write(story(r) + '\n')

if __name__ == '__main__':
    main()
