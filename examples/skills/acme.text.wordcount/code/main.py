"""Entrypoint of acme.text.wordcount."""

from runtime import blobs, log

from .counting import count, top_words


def main(args):
    blob_id = args["text_blob"]
    top = args.get("top", 10)
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 1000:
        raise ValueError("top must be an integer between 1 and 1000")
    text = blobs.read_text(blob_id)
    stats, counter = count(text)
    log.info(f"counted {stats['words']} words in {stats['lines']} lines")
    stats["top_words_blob"] = blobs.write_json({"top": top_words(counter, top)})
    return stats
